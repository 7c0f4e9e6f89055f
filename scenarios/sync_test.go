package scenarios

import (
	"context"
	"fmt"
	"reflect"
	"regexp"
	"strings"
	"testing"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// TestStepDefinitionsInSync needs no cluster. It fails when a step of a feature has no
// definition or more than one, when a definition is used by no feature, or when a handler's
// parameters do not fit its pattern and step argument.
func TestStepDefinitionsInSync(t *testing.T) {
	pickles, err := harness.LoadFeatures(featuresDir)
	if err != nil {
		t.Fatal(err)
	}
	defs := Definitions()
	res := make([]*regexp.Regexp, len(defs))
	for i, d := range defs {
		re, err := regexp.Compile(d.Pattern)
		if err != nil {
			t.Fatalf("step pattern %q does not compile: %v", d.Pattern, err)
		}
		res[i] = re
		if err := checkHandler(re, d.Handler); err != nil {
			t.Errorf("step %q: %v", d.Pattern, err)
		}
	}
	used := make([]bool, len(defs))
	reported := map[string]bool{}
	for _, p := range pickles {
		for _, step := range p.Steps {
			var matches []string
			for i, re := range res {
				if re.MatchString(step.Text) {
					used[i] = true
					matches = append(matches, defs[i].Pattern)
				}
			}
			key := step.Text
			if reported[key] {
				continue
			}
			switch {
			case len(matches) == 0:
				reported[key] = true
				t.Errorf("%s (%s): no step definition matches %q; add one to the domain's file in scenarios/", p.Location, p.Name, step.Text)
			case len(matches) > 1:
				reported[key] = true
				t.Errorf("%s (%s): %q matches %d definitions: %s", p.Location, p.Name, step.Text, len(matches), strings.Join(matches, " | "))
			}
			hasArg := step.Argument != nil
			for i, re := range res {
				if re.MatchString(step.Text) && takesStepArgument(defs[i].Handler) != hasArg {
					reported[key] = true
					t.Errorf("%s: %q: the step has a table or doc string: %t, its handler takes one: %t", p.Location, step.Text, hasArg, !hasArg)
				}
			}
		}
	}
	for i, u := range used {
		if !u {
			t.Errorf("step definition %q is used by no feature; remove it or use it", defs[i].Pattern)
		}
	}
}

var (
	ctxType       = reflect.TypeFor[context.Context]()
	errType       = reflect.TypeFor[error]()
	tableType     = reflect.TypeFor[*godog.Table]()
	docStringType = reflect.TypeFor[*godog.DocString]()
)

// checkHandler checks the handler's shape: ctx first, one parameter per capture group, an
// optional table or doc string last, and an error (or context and error) returned.
func checkHandler(re *regexp.Regexp, h any) error {
	ft := reflect.TypeOf(h)
	if ft == nil || ft.Kind() != reflect.Func {
		return fmt.Errorf("handler is %T, not a func", h)
	}
	if ft.NumIn() == 0 || ft.In(0) != ctxType {
		return fmt.Errorf("handler must take a context.Context first")
	}
	params := ft.NumIn() - 1
	if takesStepArgument(h) {
		params--
	}
	if params != re.NumSubexp() {
		return fmt.Errorf("handler takes %d step parameters, the pattern has %d capture groups", params, re.NumSubexp())
	}
	switch {
	case ft.NumOut() == 1 && ft.Out(0) == errType:
	case ft.NumOut() == 2 && ft.Out(0) == ctxType && ft.Out(1) == errType:
	default:
		return fmt.Errorf("handler must return error or (context.Context, error)")
	}
	return nil
}

func takesStepArgument(h any) bool {
	ft := reflect.TypeOf(h)
	if ft.NumIn() == 0 {
		return false
	}
	last := ft.In(ft.NumIn() - 1)
	return last == tableType || last == docStringType
}
