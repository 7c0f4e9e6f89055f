package scenarios

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"os/signal"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/topology"
)

// opts are godog's options; --godog.tags, --godog.random, --godog.format … override them.
var opts = godog.Options{
	Format:    "pretty",
	Strict:    true, // undefined or pending steps fail
	Randomize: -1,   // a random order, seed printed; --godog.random=SEED repeats one
}

// The godog flags go on the standard flag set that `go test` parses, beside -test.*:
// godog.BindCommandLineFlags binds them to pflag, whose Parse leaves go test's own flags
// (-test.run, -test.v) unset.
func init() { godog.BindFlags("godog.", flag.CommandLine, &opts) }

// configFile is the suite's one place for timeouts and the topology.
const configFile = "config.yaml"

// TestFeatures runs the features in ../features with godog, each scenario a subtest. It brings
// up the shared federation only when a selected scenario needs it.
func TestFeatures(t *testing.T) {
	start := time.Now()
	cfg, err := harness.LoadConfig(configFile)
	if err != nil {
		t.Fatal(err)
	}
	topFile, err := harness.SelectTopology(cfg, configFile) // $POLYKUBE_SCENARIO_TOPOLOGY, e.g. topology-kind.yaml
	if err != nil {
		t.Fatal(err)
	}
	top, err := topology.Load(topFile)
	if err != nil {
		t.Fatal(err)
	}
	if err := harness.ApplyImages(top); err != nil { // $POLYKUBE_SCENARIO_IMAGES, e.g. local
		t.Fatal(err)
	}
	pickles, err := harness.LoadFeatures(featuresDir)
	if err != nil {
		t.Fatal(err)
	}
	plan := planRun(pickles, opts.Tags, top.Provider, top.Delivery, harness.ProviderCapabilities(top.Provider), top.Misnamed(), top.Addons)
	if err := withAddons(top, plan.addons); err != nil {
		t.Fatal(err)
	}

	artifacts, err := artifactsDir()
	if err != nil {
		t.Fatal(err)
	}
	run := opts
	run.TestingT = t
	run.Paths = []string{featuresDir}
	run.Tags = plan.tags
	run.Format = withReports(run.Format, artifacts)
	fmt.Printf("scenarios: %d selected to run, %d not run; provider %s; seed %d (--godog.random=%[4]d repeats the order); reports in %s\n",
		plan.toRun, len(plan.notRun), top.Provider, seedOf(run.Randomize), artifacts)
	if slices.Contains(plan.addons, topology.AddonMeshMirror) {
		fmt.Printf("scenarios: @mesh-mirror scenarios selected: the test bed's mesh mirror stands in for Cilium's endpoint-slice synchronisation on %s (every %s, cache TTL %s)\n",
			top.Provider, top.MeshMirror.Interval.Duration, top.MeshMirror.CacheTTL.Duration)
	}
	if run.Randomize == -1 {
		run.Randomize = seedOf(-1)
	}

	// The run's context ends on Ctrl-C or SIGTERM, and before go test's -timeout would kill
	// the binary: scenarios then fail fast, and the federation is still torn down.
	runCtx, stop := runContext(t, cfg)
	t.Cleanup(stop) // registered first, so it runs after the federation's teardown
	run.DefaultContext = runCtx

	results := &results{}
	var suite *harness.Suite
	if plan.toRun > 0 {
		upStart := time.Now()
		fed, err := bringUp(t, runCtx, cfg, top, func(d time.Duration) {
			line := fmt.Sprintf("scenario suite on %s: teardown of the federation took %s\n", top.Provider, d.Round(time.Second))
			fmt.Print(line)
			appendFile(filepath.Join(artifacts, "summary.txt"), line)
		})
		if err != nil {
			t.Fatal(err)
		}
		results.bringUp = time.Since(upStart)
		suite = harness.NewSuite(cfg, fed)
		t.Cleanup(func() {
			if err := suite.Close(); err != nil {
				t.Errorf("remove what the suite kept for its scenarios: %v", err)
			}
		})
	}
	status := godog.TestSuite{
		Name:                "polykube",
		ScenarioInitializer: func(sc *godog.ScenarioContext) { initScenario(sc, suite, artifacts, results) },
		Options:             &run,
	}.Run()

	summary := results.summary(top.Provider, plan.notRun, time.Since(start))
	if top.Delivery == topology.DeliveryArgoCDCentral {
		// Shape (a) breaks Polykube's "no process holds all credentials": the summary says so.
		summary += "  delivery argocd-central: " + testbed.CentralCredentialsNote(top) + "\n"
	}
	fmt.Print(summary)
	if err := os.WriteFile(filepath.Join(artifacts, "summary.txt"), []byte(summary), 0o644); err != nil {
		t.Errorf("write the summary: %v", err)
	}
	if status != 0 && !t.Failed() {
		t.Errorf("godog exited with status %d (a usage or report error)", status)
	}
}

// runContext is cancelled by the first Ctrl-C or SIGTERM (a second one kills the test at
// once), and ends ahead of go test's -timeout deadline by the cleanup wait plus a minute, so
// that the scenario in flight fails and the federation is torn down before the binary is
// killed.
func runContext(t *testing.T, cfg *harness.Config) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(context.Background())
	stopTimer := func() {}
	if deadline, ok := t.Deadline(); ok {
		margin := cfg.Wait(harness.WaitCleanup).Timeout.Duration + time.Minute
		ctx, stopTimer = context.WithDeadlineCause(ctx, deadline.Add(-margin),
			fmt.Errorf("the suite stops %s before go test's -timeout, to tear the federation down; raise -timeout", margin))
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	go func() {
		select {
		case sig := <-sigs:
			signal.Stop(sigs) // a second signal kills at once
			fmt.Fprintf(os.Stderr, "\nscenarios: %s: stopping the run and tearing the federation down (send it again to kill at once)\n", sig)
			cancel(fmt.Errorf("interrupted by %s", sig))
		case <-done:
		}
	}()
	return ctx, func() {
		signal.Stop(sigs)
		close(done)
		stopTimer()
		cancel(errors.New("the run ended"))
	}
}

// bringUp brings up the shared federation once, within the bring-up wait, and tears it down
// when the test ends, also when it fails or is interrupted.
// bringUp brings the shared federation up and registers its teardown, whose duration goes to
// tornDown.
func bringUp(t *testing.T, runCtx context.Context, cfg *harness.Config, top *topology.Topology, tornDown func(time.Duration)) (harness.Federation, error) {
	ctx, cancel := context.WithTimeout(runCtx, cfg.Wait(harness.WaitBringUp).Timeout.Duration)
	defer cancel()
	fed, err := harness.Open(ctx, top, os.Stderr)
	if err != nil {
		return nil, fmt.Errorf("bring up the federation of %s: %w", cfg.Topology, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), cfg.Wait(harness.WaitCleanup).Timeout.Duration)
		defer cancel()
		start := time.Now()
		if err := fed.Close(ctx); err != nil {
			t.Errorf("tear down the federation: %v", err)
		}
		tornDown(time.Since(start))
	})
	return fed, nil
}

type scenarioCancelKey struct{}

// initScenario binds the steps and the hooks that give each scenario its own state, heal its
// faults and clean up after it, and attach diagnostics when it fails.
func initScenario(sc *godog.ScenarioContext, suite *harness.Suite, artifacts string, res *results) {
	Bind(sc)
	sc.Before(func(ctx context.Context, p *godog.Scenario) (context.Context, error) {
		if suite == nil {
			return ctx, errors.New("the federation is not up: this scenario was not expected to run (check the tags)")
		}
		res.begin(p)
		s := suite.NewScenario(p.Name)
		ctx, cancel := context.WithTimeout(ctx, suite.Config.Wait(harness.WaitScenario).Timeout.Duration)
		ctx = context.WithValue(ctx, scenarioCancelKey{}, cancel)
		ctx = WithScenario(ctx, s)
		if err := s.Setup(ctx); err != nil {
			return ctx, fmt.Errorf("set up the scenario's namespace %s: %w", s.Namespace, err)
		}
		return ctx, nil
	})
	sc.After(func(ctx context.Context, p *godog.Scenario, err error) (context.Context, error) {
		if cancel, ok := ctx.Value(scenarioCancelKey{}).(context.CancelFunc); ok {
			defer cancel()
		}
		s, serr := scenario(ctx)
		if serr == nil && err != nil {
			ctx = attachDiagnostics(ctx, s, p, artifacts)
		}
		if serr == nil {
			tctx, cancel := context.WithTimeout(context.Background(), s.Config.Wait(harness.WaitCleanup).Timeout.Duration)
			defer cancel()
			if terr := s.Teardown(tctx); terr != nil {
				err = errors.Join(err, fmt.Errorf("tear down the scenario (heal faults, remove from Git, delete namespace %s): %w", s.Namespace, terr))
			}
		}
		res.add(p, err)
		return ctx, err
	})
}

var unsafeChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

// argoCDTags are the tags of the scenarios of each Argo CD delivery shape.
var argoCDTags = map[string]string{topology.DeliveryArgoCD: "@argocd", topology.DeliveryArgoCDCentral: "@argocd-central"}

// argoCDShape is the Argo CD delivery a scenario is tagged for, or "".
func argoCDShape(p harness.Pickle) string {
	for _, d := range []string{topology.DeliveryArgoCD, topology.DeliveryArgoCDCentral} {
		if p.HasTag(argoCDTags[d]) {
			return d
		}
	}
	return ""
}

// argoCDShapeReason says which topology runs the scenarios of an Argo CD delivery.
func argoCDShapeReason(delivery string) string {
	return fmt.Sprintf("needs delivery %s (POLYKUBE_SCENARIO_TOPOLOGY=topology-%s.yaml)", delivery, delivery)
}

// attachDiagnostics writes the test bed's diagnostics bundle beside the reports and references
// it from the failing scenario (cucumber JSON attachment and test log).
func attachDiagnostics(ctx context.Context, s *harness.Scenario, p *godog.Scenario, artifacts string) context.Context {
	dir := filepath.Join(artifacts, "diagnostics", strings.Trim(unsafeChars.ReplaceAllString(p.Name, "-"), "-")+"-"+s.Namespace)
	dctx, cancel := context.WithTimeout(context.Background(), s.Config.Wait(harness.WaitDiagnostics).Timeout.Duration)
	defer cancel()
	bundle, err := s.Fed.Diagnose(dctx, dir)
	note := fmt.Sprintf("diagnostics bundle of scenario %q (namespace %s): %s", p.Name, s.Namespace, bundle)
	if err != nil {
		note = fmt.Sprintf("diagnostics bundle of scenario %q (namespace %s) at %s is incomplete: %v", p.Name, s.Namespace, dir, err)
	}
	godog.Logf(ctx, "%s", note)
	return godog.Attach(ctx, godog.Attachment{FileName: "diagnostics.txt", MediaType: "text/plain", Body: []byte(note + "\n")})
}

// runPlan is what a run selects: the effective tag expression, how many scenarios it runs,
// those it does not run, each with the reason, and the optional test-bed add-ons the
// scenarios it runs declare by tag (tagAddons).
type runPlan struct {
	tags   string
	toRun  int
	notRun []notRun
	addons []string
}

// tagAddons are the tags by which a scenario declares that it needs an optional add-on of the
// test bed; the run then brings it up. @mesh-mirror: the mesh mirror stands in for Cilium's
// endpoint-slice synchronisation on a provider without a datapath (kwok). @prometheus: a
// Prometheus per cluster scrapes its operator and evaluates the shipped alert rules.
// @registry: an OCI registry on the machine, which a release is published to.
var tagAddons = map[string]string{"@mesh-mirror": topology.AddonMeshMirror, "@prometheus": topology.AddonPrometheus, "@registry": topology.AddonRegistry}

// withAddons adds the add-ons the plan needs to the topology, with their defaults.
func withAddons(top *topology.Topology, addons []string) error {
	for _, a := range addons {
		if !top.HasAddon(a) {
			top.Addons = append(top.Addons, a)
		}
	}
	top.SetDefaults()
	if err := top.Validate(); err != nil {
		return fmt.Errorf("the topology with the add-ons %v the selected scenarios need: %w", addons, err)
	}
	return nil
}

type notRun struct {
	name, location, reason string
}

// planRun narrows the user's tag expression: @datapath scenarios are not run on a provider
// without the datapath capability, and @wip scenarios are not run unless asked for by tag.
// @partition scenarios cut the network between clusters: on a datapath provider without the
// partition capability (k0s) they are not run, and say so. @mesh-mirror scenarios bring the test bed's mesh mirror up on a provider without a datapath;
// on one with it Cilium's own endpoint-slice synchronisation mirrors (testbed/datapath enables
// it), so they run with no add-on. Everything it leaves out that the user's expression
// selected is reported, never dropped.
//
// @misnamed-mesh scenarios need a cluster whose Cilium goes by another name than its
// ClusterMember: the mesh mirror takes one at run time, real Cilium only at install. On a
// datapath provider they run only on a topology that installs such a cluster (misnamed lists
// them, topology-kind-misnamed.yaml), and there only they run: the rest need a mesh whose names
// are right.
//
// @registry scenarios publish a release to the test bed's registry and install it. On kwok the
// run brings the add-on up for them (tagAddons); on a datapath provider the in-cluster bed runs
// it only where the topology asks for it (addons, the topology's: topology-kind.yaml and
// topology-k0s.yaml, whose nodes' containerd it points at the registry), so they run only there,
// and say so elsewhere.
func planRun(pickles []harness.Pickle, userTags, provider, delivery string, caps []string, misnamed []string, addons []string) runPlan {
	plan := runPlan{tags: userTags}
	hasDatapath := slices.Contains(caps, harness.CapabilityDatapath)
	hasPartition := slices.Contains(caps, harness.CapabilityPartition)
	wantsWIP := regexp.MustCompile(`(^|[^~])@wip\b`).MatchString(userTags)
	wantsSoak := regexp.MustCompile(`(^|[^~])@soak\b`).MatchString(userTags)
	// The scenarios of an Argo CD shape (@argocd: an Argo CD per cluster; @argocd-central: one
	// hub) run on a federation that delivers with that shape, and only they do: the rest are
	// Flux's, whose run covers them (make test runs all three).
	own := argoCDTags[delivery]
	argoCD := own != ""
	for _, d := range []string{topology.DeliveryArgoCD, topology.DeliveryArgoCDCentral} {
		if d == delivery {
			plan.tags = harness.AndTag(plan.tags, argoCDTags[d])
		} else {
			plan.tags = harness.AndNot(plan.tags, argoCDTags[d])
		}
	}
	if !hasDatapath {
		plan.tags = harness.AndNot(plan.tags, "@datapath")
	} else {
		if len(misnamed) > 0 {
			plan.tags = harness.AndTag(plan.tags, "@misnamed-mesh")
		} else {
			plan.tags = harness.AndNot(plan.tags, "@misnamed-mesh")
		}
		// The prometheus add-on runs beside kwok clusters, not in real ones (yet).
		plan.tags = harness.AndNot(plan.tags, "@prometheus")
	}
	if hasDatapath && !hasPartition {
		plan.tags = harness.AndNot(plan.tags, "@partition")
	}
	if !wantsWIP {
		plan.tags = harness.AndNot(plan.tags, "@wip")
	}
	if !wantsSoak {
		plan.tags = harness.AndNot(plan.tags, "@soak")
	}
	// @host-operators scenarios swap a cluster's operator binary, which only the host
	// bed on kwok (whose operators are host processes) can do.
	hostOperators := provider == topology.ProviderKwok
	if !hostOperators {
		plan.tags = harness.AndNot(plan.tags, "@host-operators")
	}
	registry := !hasDatapath || slices.Contains(addons, topology.AddonRegistry)
	if !registry {
		plan.tags = harness.AndNot(plan.tags, "@registry")
	}
	for _, p := range pickles {
		if !harness.MatchTags(userTags, p.Tags) {
			continue
		}
		switch {
		case argoCD && !p.HasTag(own) && argoCDShape(p) != "":
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, argoCDShapeReason(argoCDShape(p))})
		case argoCD && !p.HasTag(own):
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, fmt.Sprintf("delivered by Flux (this run delivers with Argo CD and runs the %s scenarios; the default topology runs the rest)", own)})
		case !argoCD && argoCDShape(p) != "":
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, argoCDShapeReason(argoCDShape(p))})
		case p.HasTag("@misnamed-mesh") && hasDatapath && len(misnamed) == 0:
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, fmt.Sprintf("needs a cluster whose Cilium goes by another name, which real Cilium takes only at install (@misnamed-mesh: POLYKUBE_SCENARIO_TOPOLOGY=topology-kind-misnamed.yaml on %s)", provider)})
		case p.HasTag("@datapath") && !hasDatapath:
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, fmt.Sprintf("needs datapath (provider %s)", provider)})
		case p.HasTag("@partition") && hasDatapath && !hasPartition:
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, fmt.Sprintf("needs the partition capability (cutting the network between clusters), which provider %s lacks: run it on kind", provider)})
		case p.HasTag("@prometheus") && hasDatapath:
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, fmt.Sprintf("needs the test bed's prometheus add-on, which runs beside kwok clusters only (provider %s)", provider)})
		case p.HasTag("@wip") && !wantsWIP:
			reason := p.WIPReason
			if reason == "" {
				reason = "no reason given; add a \"# wip: …\" comment above the tag"
			}
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, "@wip (" + reason + ")"})
		case p.HasTag("@host-operators") && !hostOperators:
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, fmt.Sprintf("needs operators run as host processes (provider kwok; this run's is %s)", provider)})
		case p.HasTag("@registry") && !registry:
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, fmt.Sprintf("needs the registry add-on, which this %s topology does not run (add it where the provider can point its nodes' containerd at it, as topology-kind.yaml and topology-k0s.yaml do)", provider)})
		case p.HasTag("@soak") && !wantsSoak:
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, "@soak (as long as it is told to run: make soak, or --godog.tags=@soak)"})
		case !p.HasTag("@misnamed-mesh") && hasDatapath && len(misnamed) > 0:
			plan.notRun = append(plan.notRun, notRun{p.Name, p.Location, fmt.Sprintf("needs a mesh whose names are right (this topology installs Cilium in %s under another name on purpose and runs the @misnamed-mesh scenarios; topology-kind.yaml runs the rest)", strings.Join(misnamed, ", "))})
		default:
			plan.toRun++
			for tag, addon := range tagAddons {
				if p.HasTag(tag) && !hasDatapath && !slices.Contains(plan.addons, addon) {
					plan.addons = append(plan.addons, addon)
				}
			}
		}
	}
	slices.Sort(plan.addons)
	return plan
}

// withReports adds the JUnit and cucumber JSON reports in dir to a godog format list, unless
// the list already writes them.
func withReports(format, dir string) string {
	if !strings.Contains(format, "junit") {
		format += ",junit:" + filepath.Join(dir, "junit.xml")
	}
	if !strings.Contains(format, "cucumber") {
		format += ",cucumber:" + filepath.Join(dir, "cucumber.json")
	}
	return format
}

// artifactsDir is $ARTIFACTS/scenarios, or _artifacts/scenarios at the repository root.
func artifactsDir() (string, error) {
	base := os.Getenv("ARTIFACTS")
	if base == "" {
		base = filepath.Join("..", "_artifacts")
	}
	dir, err := filepath.Abs(filepath.Join(base, "scenarios"))
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create the artifacts directory: %w", err)
	}
	return dir, nil
}

var (
	seedOnce sync.Once
	seed     int64
)

// seedOf resolves godog's "pick a seed" (-1) once, so the printed seed is the one used.
func seedOf(r int64) int64 {
	if r != -1 {
		return r
	}
	seedOnce.Do(func() { seed = time.Now().UnixNano()%99998 + 1 })
	return seed
}

// results counts scenario outcomes as the After hook sees them, and where the time went.
type results struct {
	mu      sync.Mutex
	passed  []string
	failed  []string
	bringUp time.Duration
	started map[string]time.Time     // by scenario id
	took    map[string]time.Duration // by feature file
	count   map[string]int           // scenarios by feature file
}

// begin records a scenario's start (its Before hook).
func (r *results) begin(p *godog.Scenario) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.started == nil {
		r.started = map[string]time.Time{}
	}
	r.started[p.Id] = time.Now()
}

func (r *results) add(p *godog.Scenario, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	feature := filepath.Base(p.Uri)
	if start, ok := r.started[p.Id]; ok {
		if r.took == nil {
			r.took, r.count = map[string]time.Duration{}, map[string]int{}
		}
		r.took[feature] += time.Since(start)
		r.count[feature]++
	}
	name := fmt.Sprintf("%s (%s)", p.Name, feature)
	if err != nil {
		r.failed = append(r.failed, name+": "+firstLine(err.Error()))
	} else {
		r.passed = append(r.passed, name)
	}
}

// summary lists every scenario selected, with where it ran (the provider) and how it went:
// the passed ones, the failed ones with their first error line, and those not run with why.
func (r *results) summary(provider string, notRun []notRun, wall time.Duration) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "\nscenario suite on %s: %d passed, %d failed, %d not run in %s\n", provider, len(r.passed), len(r.failed), len(notRun), wall.Round(time.Millisecond))
	for _, p := range slices.Sorted(slices.Values(r.passed)) {
		fmt.Fprintf(&b, "  passed on %s: %s\n", provider, p)
	}
	for _, f := range r.failed {
		fmt.Fprintf(&b, "  failed on %s: %s\n", provider, f)
	}
	for _, n := range notRun {
		fmt.Fprintf(&b, "  not run: %s — %s (%s)\n", n.reason, n.name, n.location)
	}
	b.WriteString(r.timeTable(wall))
	return b.String()
}

// timeTable says where the suite's time went: the bring-up, then each feature (its scenarios'
// set-up, steps and clean-up), slowest first; the teardown is printed once it is over.
func (r *results) timeTable(wall time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "where the time went (wall %s):\n", wall.Round(time.Second))
	fmt.Fprintf(&b, "  %-36s %14s %8s\n", "bring-up of the federation", "", r.bringUp.Round(time.Second))
	features := slices.Collect(maps.Keys(r.took))
	slices.SortFunc(features, func(a, b string) int { return cmp.Compare(r.took[b], r.took[a]) })
	for _, f := range features {
		fmt.Fprintf(&b, "  %-36s %4d scenario(s) %8s\n", f, r.count[f], r.took[f].Round(time.Second))
	}
	return b.String()
}

// appendFile adds text to a file, best effort: the summary is printed anyway.
func appendFile(path, text string) {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		return
	}
	defer f.Close()
	_, _ = f.WriteString(text)
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
