// Package scenarios holds the step definitions of the Gherkin features in ../features, grouped
// per domain (gitops.go, distribution.go, status.go, faults.go, mesh.go, failover.go,
// datastore.go, federation.go, credentials.go, validation.go, routing.go, mistakes.go, argocd.go,
// overrides.go, upgrade.go, suspend.go). Steps are thin: they parse their arguments, take the scenario's
// state from the context and call the harness. The suite runs under `go test` (suite_test.go);
// docs/scenario-authoring.md explains how to add to it.
package scenarios

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// StepDef is one step definition: a regular expression over the step text and its handler.
// Handlers take a context.Context first, then one argument per capture group, then the step's
// table or doc string when it has one, and return an error.
type StepDef struct {
	Pattern string
	Handler any
}

// registry collects step definitions.
type registry struct{ defs []StepDef }

func (r *registry) step(pattern string, handler any) {
	r.defs = append(r.defs, StepDef{Pattern: pattern, Handler: handler})
}

// Definitions returns every step definition of every domain.
func Definitions() []StepDef {
	r := &registry{}
	for _, domain := range []func(*registry){
		commonSteps, gitopsSteps, distributionSteps, statusSteps, faultSteps, meshSteps, meshViewSteps,
		failoverSteps, datastoreSteps, federationSteps, credentialSteps, validationSteps, routingSteps, mistakeSteps,
		overrideSteps, autoscalingSteps, soakSteps, argoCDSteps, upgradeSteps, installSteps, suspendSteps, alertSteps, dashboardSteps,
	} {
		domain(r)
	}
	return r.defs
}

// Bind registers every step definition with a godog scenario.
func Bind(sc *godog.ScenarioContext) {
	for _, d := range Definitions() {
		sc.Step(d.Pattern, d.Handler)
	}
}

type scenarioKey struct{}

// WithScenario returns ctx carrying the scenario's state.
func WithScenario(ctx context.Context, s *harness.Scenario) context.Context {
	return context.WithValue(ctx, scenarioKey{}, s)
}

// scenario returns the state of the running scenario.
func scenario(ctx context.Context) (*harness.Scenario, error) {
	s, ok := ctx.Value(scenarioKey{}).(*harness.Scenario)
	if !ok {
		return nil, errors.New("no scenario state in the context: the suite's Before hook did not run (is the federation up?)")
	}
	return s, nil
}

// with adapts a step body that needs the scenario to a handler.
func with(ctx context.Context, fn func(*harness.Scenario) error) error {
	s, err := scenario(ctx)
	if err != nil {
		return err
	}
	return fn(s)
}

// The step adapters make a harness method the handler of a step, so that a registration is
// one line: stepN takes a method expression ((*harness.Scenario).Method) whose parameters
// after the context are the step's N arguments, in the step's order; doN the same for a
// method that takes no context (one that only records what the scenario will do). godog
// reads the handler's parameter types to convert the captures, as it does for a closure.

func step0(m func(*harness.Scenario, context.Context) error) func(context.Context) error {
	return func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, ctx) })
	}
}

func step1[A any](m func(*harness.Scenario, context.Context, A) error) func(context.Context, A) error {
	return func(ctx context.Context, a A) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, ctx, a) })
	}
}

func step2[A, B any](m func(*harness.Scenario, context.Context, A, B) error) func(context.Context, A, B) error {
	return func(ctx context.Context, a A, b B) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, ctx, a, b) })
	}
}

func step3[A, B, C any](m func(*harness.Scenario, context.Context, A, B, C) error) func(context.Context, A, B, C) error {
	return func(ctx context.Context, a A, b B, c C) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, ctx, a, b, c) })
	}
}

func step4[A, B, C, D any](m func(*harness.Scenario, context.Context, A, B, C, D) error) func(context.Context, A, B, C, D) error {
	return func(ctx context.Context, a A, b B, c C, d D) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, ctx, a, b, c, d) })
	}
}

func step5[A, B, C, D, E any](m func(*harness.Scenario, context.Context, A, B, C, D, E) error) func(context.Context, A, B, C, D, E) error {
	return func(ctx context.Context, a A, b B, c C, d D, e E) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, ctx, a, b, c, d, e) })
	}
}

func step6[A, B, C, D, E, F any](m func(*harness.Scenario, context.Context, A, B, C, D, E, F) error) func(context.Context, A, B, C, D, E, F) error {
	return func(ctx context.Context, a A, b B, c C, d D, e E, f F) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, ctx, a, b, c, d, e, f) })
	}
}

func do1[A any](m func(*harness.Scenario, A) error) func(context.Context, A) error {
	return func(ctx context.Context, a A) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, a) })
	}
}

func do2[A, B any](m func(*harness.Scenario, A, B) error) func(context.Context, A, B) error {
	return func(ctx context.Context, a A, b B) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, a, b) })
	}
}

func do3[A, B, C any](m func(*harness.Scenario, A, B, C) error) func(context.Context, A, B, C) error {
	return func(ctx context.Context, a A, b B, c C) error {
		return with(ctx, func(s *harness.Scenario) error { return m(s, a, b, c) })
	}
}

func commonSteps(r *registry) {
	r.step(`^a federation of the clusters (.+)$`, step1(func(s *harness.Scenario, ctx context.Context, list string) error {
		names, err := quotedList(list)
		if err != nil {
			return err
		}
		return harness.CheckClusters(s.Fed, names)
	}))
}

var quotedRE = regexp.MustCompile(`"([^"]*)"`)

// quotedList parses `"a", "b" and "c"` into its names.
func quotedList(s string) ([]string, error) {
	var out []string
	for _, m := range quotedRE.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	rest := strings.TrimSpace(quotedRE.ReplaceAllString(s, ""))
	rest = strings.NewReplacer(",", "", "and", "").Replace(rest)
	if len(out) == 0 || strings.TrimSpace(rest) != "" {
		return nil, fmt.Errorf("want a list such as \"a\", \"b\" and \"c\", got %s", s)
	}
	return out, nil
}

// tableRows turns a table with a header row into one map per row, keyed by header.
func tableRows(t *godog.Table, required ...string) ([]map[string]string, error) {
	if t == nil || len(t.Rows) == 0 {
		return nil, errors.New("the step needs a table with a header row")
	}
	var header []string
	for _, c := range t.Rows[0].Cells {
		header = append(header, strings.TrimSpace(c.Value))
	}
	for _, r := range required {
		if !contains(header, r) {
			return nil, fmt.Errorf("the table needs a column %q (it has %v)", r, header)
		}
	}
	var rows []map[string]string
	for _, row := range t.Rows[1:] {
		m := map[string]string{}
		for i, c := range row.Cells {
			m[header[i]] = strings.TrimSpace(c.Value)
		}
		rows = append(rows, m)
	}
	return rows, nil
}

// optInt32 parses a table cell; empty or "-" is unset.
func optInt32(cell, what string) (*int32, error) {
	if cell == "" || cell == "-" {
		return nil, nil
	}
	v, err := strconv.ParseInt(cell, 10, 32)
	if err != nil {
		return nil, fmt.Errorf("%s %q is not a whole number", what, cell)
	}
	i := int32(v)
	return &i, nil
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
