package soak

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/placement"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Options set a soak.
type Options struct {
	// Duration is how long new steps are started; the step under way finishes after it.
	Duration time.Duration
	// Seed chooses the walk; the same seed on the same topology replays it.
	Seed uint64
	// MaxHold is the longest a fault or a missing Secret lasts (default 30s).
	MaxHold time.Duration
	// ConvergeWithin bounds the convergence after each step (default 3m).
	ConvergeWithin time.Duration
	// Every is the interval of the observations during a step (default 2s).
	Every time.Duration
	// Log receives a line per step.
	Log io.Writer
}

// Report is what a soak did and found.
type Report struct {
	Seed       uint64
	Steps      int
	Faults     map[string]int // injected, by fault
	Edits      map[Kind]int   // scale, relabel, secret-delete
	Checks     int            // invariant checks made
	Violations []Violation
	Elapsed    time.Duration
	// Slowest is the longest convergence after a step, and the step.
	Slowest     time.Duration
	SlowestStep int
}

// Summary is the report in a few lines.
func (r *Report) Summary() string {
	var b strings.Builder
	fmt.Fprintf(&b, "soak seed %d: %d steps in %s; faults injected:", r.Seed, r.Steps, r.Elapsed.Round(time.Second))
	for _, f := range slices.Sorted(maps.Keys(r.Faults)) {
		fmt.Fprintf(&b, " %s %d", f, r.Faults[f])
	}
	fmt.Fprintf(&b, "; edits:")
	for _, k := range slices.Sorted(maps.Keys(r.Edits)) {
		fmt.Fprintf(&b, " %s %d", k, r.Edits[k])
	}
	fmt.Fprintf(&b, "; %d invariant checks; slowest convergence %s (step %d); %d violations\n",
		r.Checks, r.Slowest.Round(time.Second), r.SlowestStep, len(r.Violations))
	for _, v := range r.Violations {
		fmt.Fprintf(&b, "  VIOLATION %s\n", v)
	}
	if len(r.Violations) > 0 {
		fmt.Fprintf(&b, "replay: polykube-testbed soak --seed %d (the walk is the same up to step %d)\n", r.Seed, r.Violations[0].Step)
	}
	return b.String()
}

// Faults is what the soak puts in effect: every fault of the test bed but the network, which
// only kind can cut.
var Faults = []testbed.Fault{testbed.FaultAPIServer, testbed.FaultOperator, testbed.FaultFlux, testbed.FaultGit}

type runner struct {
	bed     testbed.Bed
	opts    Options
	top     *topology.Topology
	clients map[string]client.Client
	fleet   *Fleet
	tracker *Tracker
	report  *Report
	log     io.Writer
}

// Run soaks a federation that is up: it commits the soak's Workloads, waits for them, walks
// until the duration is over, and returns the report. A violation is in the report, not an
// error; an error is the test bed failing to do what a step asked.
func Run(ctx context.Context, bed testbed.Bed, opts Options) (*Report, error) {
	if opts.MaxHold <= time.Second {
		opts.MaxHold = 30 * time.Second
	}
	if opts.ConvergeWithin <= 0 {
		opts.ConvergeWithin = 3 * time.Minute
	}
	if opts.Every <= 0 {
		opts.Every = 2 * time.Second
	}
	r := &runner{bed: bed, opts: opts, top: bed.Topology(), clients: map[string]client.Client{},
		report: &Report{Seed: opts.Seed, Faults: map[string]int{}, Edits: map[Kind]int{}}, log: opts.Log}
	if r.log == nil {
		r.log = io.Discard
	}
	for _, c := range r.top.ClusterNames() {
		cfg, err := bed.AdminConfig(c)
		if err != nil {
			return nil, err
		}
		cfg.Timeout = 5 * time.Second
		if r.clients[c], err = client.New(cfg, client.Options{Scheme: testbed.Scheme}); err != nil {
			return nil, fmt.Errorf("client of %s: %w", c, err)
		}
	}
	r.fleet, r.tracker = NewFleet(r.top), NewTracker(r.top.ClusterNames())
	start := time.Now()
	if err := r.setUp(ctx); err != nil {
		return nil, fmt.Errorf("set up the soak's Workloads: %w", err)
	}
	walk := NewWalk(opts.Seed, r.top.ClusterNames(), Faults, opts.MaxHold)
	for time.Since(start) < opts.Duration {
		s := walk.Next()
		fmt.Fprintf(r.log, "%s %s\n", time.Now().Format("15:04:05"), s)
		if err := r.step(ctx, s); err != nil {
			// A stopped or failed walk still reports what it checked.
			r.report.Elapsed, r.report.Checks = time.Since(start), r.tracker.Checks()
			return r.report, fmt.Errorf("%s (seed %d): %w", s, opts.Seed, err)
		}
		r.report.Steps++
	}
	r.report.Elapsed, r.report.Checks = time.Since(start), r.tracker.Checks()
	return r.report, nil
}

// setUp creates the namespace and the binding's Secret in every cluster, commits the soak's
// Workloads and roster labels, and waits until the fleet has converged on them.
func (r *runner) setUp(ctx context.Context) error {
	for c, cl := range r.clients {
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
		if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s in %s: %w", Namespace, c, err)
		}
		if err := r.restoreSecret(ctx, c); err != nil {
			return err
		}
	}
	if err := r.commit(ctx, "soak: the soak's Workloads"); err != nil {
		return err
	}
	return r.converge(ctx, 0)
}

func (r *runner) commit(ctx context.Context, msg string) error {
	files, err := r.fleet.Files()
	if err != nil {
		return err
	}
	rev, err := r.bed.Commit(ctx, gitrepo.Change{Put: files, Message: msg})
	if err != nil {
		return &commitError{err}
	}
	return r.bed.WaitDelivered(ctx, rev)
}

// commitError is a commit the Git server refused or could not take: the soak cannot go on.
type commitError struct{ err error }

func (e *commitError) Error() string { return "commit to Git: " + e.err.Error() }
func (e *commitError) Unwrap() error { return e.err }

// deliver commits the desired state during a step and waits until every cluster applied it. A
// delivery that does not come within the bed's delivery wait is recorded (Flux slow to come back
// after a fault is the test bed's or Flux's, not the operator's, but the fleet did not converge
// in time) and the step goes on to its convergence wait; only a failed commit ends the soak.
func (r *runner) deliver(ctx context.Context, step int, msg string) error {
	err := r.commit(ctx, msg)
	if err == nil || ctx.Err() != nil {
		return err
	}
	var commitErr *commitError
	if errors.As(err, &commitErr) {
		return err
	}
	r.record([]Violation{{Step: step, Invariant: InvDelivered, Cluster: "*", Workload: "*", Detail: err.Error()}})
	return nil
}

// step runs one step with the observer checking the invariants all along, then waits until the
// fleet converges and settles it.
func (r *runner) step(ctx context.Context, s Step) error {
	stop := r.observe(ctx, s.N)
	err := r.do(ctx, s)
	stop()
	if err != nil {
		return err
	}
	return r.converge(ctx, s.N)
}

func (r *runner) do(ctx context.Context, s Step) error {
	switch s.Kind {
	case StepFault:
		r.report.Faults[string(s.Fault)]++
		if err := r.bed.Stop(ctx, s.Fault, s.Cluster); err != nil {
			return fmt.Errorf("stop %s: %w", s.Fault, err)
		}
		if s.Fault == testbed.FaultAPIServer {
			r.statusWhileStopped(ctx, s)
		}
		var edited bool
		if s.Edit != nil {
			var err error
			if edited, err = r.edit(ctx, *s.Edit, false); err != nil {
				return err
			}
		}
		if err := sleep(ctx, s.Hold); err != nil {
			return err
		}
		if err := r.bed.Start(ctx, s.Fault, s.Cluster); err != nil {
			return fmt.Errorf("start %s: %w", s.Fault, err)
		}
		if edited {
			// Delivered only now that the fault is repaired.
			return r.deliver(ctx, s.N, "soak: "+s.Edit.String())
		}
		return nil
	case StepScale, StepRelabel:
		_, err := r.edit(ctx, s, true)
		return err
	case StepSecretDelete:
		r.report.Edits[s.Kind]++
		if err := r.clients[s.Cluster].Delete(ctx, Secret()); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete Secret %s/%s in %s: %w", Namespace, SecretName, s.Cluster, err)
		}
		if err := sleep(ctx, s.Hold); err != nil {
			return err
		}
		return r.restoreSecret(ctx, s.Cluster)
	}
	return fmt.Errorf("unknown step kind %q", s.Kind)
}

// edit changes the desired state; with deliver it commits and waits for every cluster to apply
// it, otherwise the caller delivers once its fault is repaired. It reports whether anything
// changed.
func (r *runner) edit(ctx context.Context, s Step, deliver bool) (bool, error) {
	r.report.Edits[s.Kind]++
	if !r.fleet.Apply(s) {
		return false, nil
	}
	if err := r.tracker.Desire(r.fleet); err != nil {
		return false, err
	}
	if !deliver {
		files, err := r.fleet.Files()
		if err != nil {
			return false, err
		}
		// Committed now, delivered when the fault is repaired; Commit's nudge reaches the
		// clusters whose Flux runs.
		_, err = r.bed.Commit(ctx, gitrepo.Change{Put: files, Message: "soak: " + s.String()})
		return err == nil, err
	}
	return true, r.deliver(ctx, s.N, "soak: "+s.String())
}

func (r *runner) restoreSecret(ctx context.Context, cluster string) error {
	if err := r.clients[cluster].Create(ctx, Secret()); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s/%s in %s: %w", Namespace, SecretName, cluster, err)
	}
	return nil
}

// observe checks the invariants every opts.Every until the returned stop is called.
func (r *runner) observe(ctx context.Context, step int) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			r.record(r.tracker.Observe(step, r.readAll(ctx)))
			select {
			case <-ctx.Done():
				return
			case <-time.After(r.opts.Every):
			}
		}
	}()
	return func() { cancel(); wg.Wait() }
}

var recordMu sync.Mutex

func (r *runner) record(vs []Violation) {
	recordMu.Lock()
	defer recordMu.Unlock()
	for _, v := range vs {
		fmt.Fprintf(r.log, "  VIOLATION %s\n", v)
		r.report.Violations = append(r.report.Violations, v)
	}
}

// converge waits until the fleet is the desired state, checking the invariants on every read,
// then checks that polykube-status agrees and settles the tracker.
func (r *runner) converge(ctx context.Context, step int) error {
	start := time.Now()
	var last []Observation
	err := wait.For(ctx, topology.Wait{Timeout: topology.Duration{Duration: r.opts.ConvergeWithin}, Interval: topology.Duration{Duration: r.opts.Every}},
		"the fleet to converge", func(ctx context.Context) error {
			last = r.readAll(ctx)
			if step > 0 {
				r.record(r.tracker.Observe(step, last))
			}
			why, err := r.tracker.Converged(r.fleet, last)
			if err != nil {
				return err
			}
			if why != "" {
				return errors.New(why)
			}
			return nil
		})
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		r.record([]Violation{{Step: step, Invariant: InvConverged, Cluster: "*", Workload: "*", Detail: fmt.Sprintf("not converged within %s: %v", r.opts.ConvergeWithin, err)}})
		// Go on from what the clusters run: the next steps can still find other defects.
	} else if d := time.Since(start); d > r.report.Slowest {
		r.report.Slowest, r.report.SlowestStep = d, step
	}
	if err == nil {
		if code := r.statusExit(ctx); code != status.ExitOK {
			r.record([]Violation{{Step: step, Invariant: InvStatusAgrees, Cluster: "*", Workload: "*", Detail: fmt.Sprintf("polykube-status exits %d on a converged fleet, want %d", code, status.ExitOK)}})
		}
	}
	return r.tracker.Settle(r.fleet, last)
}

// statusWhileStopped checks that polykube-status does not call a fleet with a stopped API
// server healthy.
func (r *runner) statusWhileStopped(ctx context.Context, s Step) {
	if code := r.statusExit(ctx); code != status.ExitUnreachable {
		r.record([]Violation{{Step: s.N, Invariant: InvStatusBlind, Cluster: s.Cluster, Workload: "*", Detail: fmt.Sprintf("polykube-status exits %d while this cluster's API server is stopped, want %d (unreachable)", code, status.ExitUnreachable)}})
	}
}

// statusExit runs polykube-status's collection and merge over every cluster, as the CLI does.
func (r *runner) statusExit(ctx context.Context) int {
	var targets []status.Target
	for _, c := range r.top.ClusterNames() {
		cfg, err := r.bed.AdminConfig(c)
		targets = append(targets, status.Target{Context: c, Namespace: Namespace, Config: cfg, ConfigErr: err})
		if err == nil {
			targets[len(targets)-1].Server = cfg.Host
		}
	}
	q := status.Query{Namespace: Namespace, Timeout: 10 * time.Second, Parallel: len(targets)}
	return status.Read(ctx, targets, q, nil).Summary.ExitCode
}

// readAll reads every cluster concurrently.
func (r *runner) readAll(ctx context.Context) []Observation {
	names := r.top.ClusterNames()
	out := make([]Observation, len(names))
	var wg sync.WaitGroup
	for i, c := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = read(ctx, c, r.clients[c])
		}()
	}
	wg.Wait()
	sort.Slice(out, func(i, j int) bool { return out[i].Cluster < out[j].Cluster })
	return out
}

func read(ctx context.Context, cluster string, cl client.Client) Observation {
	o := Observation{Cluster: cluster, Deployments: map[string]DeploymentSeen{}, Workloads: map[string]WorkloadSeen{}, Bindings: map[string]WorkloadSeen{}}
	deps := &appsv1.DeploymentList{}
	if err := cl.List(ctx, deps, client.InNamespace(Namespace)); err != nil {
		return Observation{Cluster: cluster}
	}
	wls := &polykubev1alpha1.WorkloadList{}
	if err := cl.List(ctx, wls, client.InNamespace(Namespace)); err != nil {
		return Observation{Cluster: cluster}
	}
	for i := range deps.Items {
		d := &deps.Items[i]
		if d.Labels[polykubev1alpha1.ManagedByLabel] != polykubev1alpha1.ManagedByValue || !d.DeletionTimestamp.IsZero() {
			continue
		}
		replicas := int32(1)
		if d.Spec.Replicas != nil {
			replicas = *d.Spec.Replicas
		}
		o.Deployments[d.Name] = DeploymentSeen{UID: string(d.UID), Replicas: replicas, Template: templateOf(d)}
	}
	bindings := &polykubev1alpha1.DatastoreBindingList{}
	if err := cl.List(ctx, bindings, client.InNamespace(Namespace)); err != nil {
		return Observation{Cluster: cluster}
	}
	for _, w := range wls.Items {
		ws := seen(w.Generation, w.Status.ObservedGeneration, w.Status.Conditions)
		ws.SpecHash = w.Status.SpecHash
		if digest, n, ok := placement.ReportedAllocation(&w.Status); ok {
			ws.Allocation = fmt.Sprintf("%s/%d", digest, n)
		}
		o.Workloads[w.Name] = ws
	}
	for _, b := range bindings.Items {
		o.Bindings[b.Name] = seen(b.Generation, b.Status.ObservedGeneration, b.Status.Conditions)
	}
	o.Reachable = true
	return o
}

// seen is what an object's status says of its generation and Ready condition.
func seen(generation, observed int64, conditions []metav1.Condition) WorkloadSeen {
	ws := WorkloadSeen{Generation: generation, ObservedGeneration: observed}
	if c := meta.FindStatusCondition(conditions, polykubev1alpha1.ReadyCondition); c != nil {
		ws.Ready, ws.Reason, ws.Message = c.Status == metav1.ConditionTrue && c.ObservedGeneration == generation, c.Reason, c.Message
	}
	return ws
}

// sleep holds a fault for its drawn duration: the length of the fault window is what the step
// tests, so this is a deliberate wait, not a wait for a condition.
func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(d):
		return nil
	}
}

// Cleanup takes the soak's Workloads out of Git and gives the roster back its topology's
// labels, and waits until every cluster applied that (Flux prunes the soak's namespace).
func Cleanup(ctx context.Context, bed testbed.Bed) error {
	roster, err := gitrepo.RenderRoster(bed.Topology())
	if err != nil {
		return err
	}
	rev, err := bed.Commit(ctx, gitrepo.Change{
		Put: map[string][]byte{gitrepo.RosterDir + "/roster.yaml": roster}, Remove: []string{gitDir},
		Message: "soak: remove the soak's Workloads, the roster as the topology has it",
	})
	if err != nil {
		return err
	}
	return bed.WaitDelivered(ctx, rev)
}
