package status

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// --watch: the report is drawn again whenever something it is made of changes. What changes is
// learnt from API watches, one per kind per cluster, not from re-reading the fleet in a loop;
// a change then triggers one read of the whole fleet (Collect and Merge, exactly what a single
// run does), so the report drawn is always one consistent view and never a patchwork of events.
// A watch that fails (the cluster went away, credentials expired) triggers a read too, so the
// cluster is marked unreadable in the next drawing, and is opened again with a backoff; when it
// opens again, the objects it replays trigger the read that shows the cluster back.

// Watch defaults.
const (
	// DefaultSettle is how long Watch lets events gather before it reads: a rollout changes a
	// Deployment and a Workload status many times within a second.
	DefaultSettle = 300 * time.Millisecond
	// DefaultRetryMin and DefaultRetryMax bound the backoff between attempts to open a watch.
	DefaultRetryMin = time.Second
	DefaultRetryMax = 30 * time.Second
	// watchServerTimeout asks the API server to end each watch after about this long, so that a
	// connection that died without a word is noticed and replaced.
	watchServerTimeout = 5 * time.Minute
)

// Watcher opens watches; like Reader it cannot express a write.
type Watcher interface {
	Watch(ctx context.Context, list client.ObjectList, opts ...client.ListOption) (watch.Interface, error)
}

// WatcherFactory builds the Watcher of a target. Watch uses NewWatcher unless a test swaps it.
type WatcherFactory func(t Target) (Watcher, error)

// NewWatcher builds a Watcher for t whose transport refuses writes. It has no overall HTTP
// timeout (a watch is a long request); Watch bounds the opening of each watch by the
// per-cluster timeout instead.
func NewWatcher(t Target) (Watcher, error) {
	if t.ConfigErr != nil {
		return nil, t.ConfigErr
	}
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	c, err := client.NewWithWatch(ReadOnlyConfig(t.Config, 0), client.Options{Scheme: s, Mapper: staticMapper()})
	if err != nil {
		return nil, fmt.Errorf("build watch client for %s: %w", t.Config.Host, err)
	}
	return c, nil
}

// WatchOptions say how Watch reads and draws.
type WatchOptions struct {
	// Draw is called with the first report and then with every report that differs from the
	// one drawn before.
	Draw func(Report) error
	// Settle is the quiet time after a change before the read; 0 means DefaultSettle.
	Settle time.Duration
	// RetryMin and RetryMax bound the backoff of a failed watch; 0 means the defaults.
	RetryMin, RetryMax time.Duration
	// Progress, when set, is told when a watch fails and when it opens again.
	Progress io.Writer
	// NewWatcher replaces NewWatcher in tests.
	NewWatcher WatcherFactory
}

// Watch draws read's report, then draws it again each time a watch on the kinds it reads
// reports a change (or fails), until ctx ends. It returns the last report drawn, or the error
// Draw returned.
func Watch(ctx context.Context, targets []Target, q Query, read func(context.Context) Report, opts WatchOptions) (Report, error) {
	if opts.Settle <= 0 {
		opts.Settle = DefaultSettle
	}
	if opts.RetryMin <= 0 {
		opts.RetryMin = DefaultRetryMin
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = DefaultRetryMax
	}
	if opts.NewWatcher == nil {
		opts.NewWatcher = NewWatcher
	}
	changed := make(chan struct{}, 1)
	notify := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	wctx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { stop(); wg.Wait() }()
	var progressMu sync.Mutex
	say := func(format string, args ...any) {
		if opts.Progress == nil {
			return
		}
		progressMu.Lock()
		defer progressMu.Unlock()
		fmt.Fprintf(opts.Progress, "polykube-status: "+format+"\n", args...)
	}
	for _, t := range targets {
		for _, k := range watchedKinds(q) {
			wg.Go(func() { watchKind(wctx, t, k, q.Timeout, opts, notify, say) })
		}
	}

	last := read(ctx)
	if ctx.Err() != nil {
		return last, nil
	}
	if err := opts.Draw(last); err != nil {
		return last, err
	}
	lastJSON, _ := json.Marshal(last)
	for {
		select {
		case <-ctx.Done():
			return last, nil
		case <-changed:
		}
		settle := time.NewTimer(opts.Settle)
		select {
		case <-ctx.Done():
			settle.Stop()
			return last, nil
		case <-settle.C:
		}
		// Events that came while settling are part of this read.
		select {
		case <-changed:
		default:
		}
		r := read(ctx)
		if ctx.Err() != nil {
			return last, nil
		}
		b, _ := json.Marshal(r)
		if string(b) == string(lastJSON) {
			continue
		}
		if err := opts.Draw(r); err != nil {
			return last, err
		}
		last, lastJSON = r, b
	}
}

// watchedKind is one kind Watch follows in every cluster.
type watchedKind struct {
	name string
	list func() client.ObjectList
	opts []client.ListOption
}

// watchedKinds are the kinds Collect reads, with the same namespace and label scoping.
func watchedKinds(q Query) []watchedKind {
	var ns []client.ListOption
	if q.Namespace != "" {
		ns = append(ns, client.InNamespace(q.Namespace))
	}
	managed, _ := labels.NewRequirement(polykubev1alpha1.ManagedByLabel, selection.Equals, []string{polykubev1alpha1.ManagedByValue})
	hasWorkload, _ := labels.NewRequirement(polykubev1alpha1.WorkloadNameLabel, selection.Exists, nil)
	deps := append(append([]client.ListOption(nil), ns...), client.MatchingLabelsSelector{Selector: labels.NewSelector().Add(*managed, *hasWorkload)})
	return []watchedKind{
		{"workloads.polykube.kismet.io", func() client.ObjectList { return &polykubev1alpha1.WorkloadList{} }, ns},
		{"federations.polykube.kismet.io", func() client.ObjectList { return &polykubev1alpha1.FederationList{} }, nil},
		{"clustermembers.polykube.kismet.io", func() client.ObjectList { return &polykubev1alpha1.ClusterMemberList{} }, nil},
		{"serviceendpoints.polykube.kismet.io", func() client.ObjectList { return &polykubev1alpha1.ServiceEndpointList{} }, ns},
		{"datastorebindings.polykube.kismet.io", func() client.ObjectList { return &polykubev1alpha1.DatastoreBindingList{} }, ns},
		{"deployments.apps", func() client.ObjectList { return &appsv1.DeploymentList{} }, deps},
	}
}

// watchKind keeps one watch of kind k open in t until ctx ends, calling notify on every event
// and on the first failure after a success, and opening it again with a backoff after a failure.
func watchKind(ctx context.Context, t Target, k watchedKind, timeout time.Duration, opts WatchOptions, notify func(), say func(string, ...any)) {
	var w Watcher
	backoff := opts.RetryMin
	failing := false
	for ctx.Err() == nil {
		var err error
		if w == nil {
			w, err = opts.NewWatcher(t)
		}
		var events watch.Interface
		if err == nil {
			events, err = openWatch(ctx, w, k, timeout)
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if !failing {
				failing = true
				say("context %s: watch %s failed (%s): %v; retrying in %s, at most every %s", t.Context, k.name, Classify(ctx, err), err, backoff, opts.RetryMax)
				notify()
			}
			pause := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				pause.Stop()
				return
			case <-pause.C:
			}
			backoff = min(2*backoff, opts.RetryMax)
			continue
		}
		if failing {
			say("context %s: watch %s open again", t.Context, k.name)
			failing = false
		}
		backoff = opts.RetryMin
		follow(ctx, events, notify)
	}
}

// openWatch opens a watch of k, giving up after timeout. The opening request is cancelled at
// the timeout; the watch itself then lives until ctx ends or the server closes it.
func openWatch(ctx context.Context, w Watcher, k watchedKind, timeout time.Duration) (watch.Interface, error) {
	wctx, cancel := context.WithCancel(ctx)
	timer := time.AfterFunc(timeout, cancel)
	secs := int64(watchServerTimeout.Seconds())
	opts := append(append([]client.ListOption(nil), k.opts...), timeoutSeconds(secs))
	events, err := w.Watch(wctx, k.list(), opts...)
	if !timer.Stop() {
		// The timer fired: whatever came back, the opening took longer than the timeout.
		if events != nil {
			events.Stop()
		}
		cancel()
		return nil, fmt.Errorf("opening the watch took longer than --timeout (%s): %w", timeout, context.DeadlineExceeded)
	}
	if err != nil {
		cancel()
		return nil, err
	}
	return stopOnCancel{Interface: events, cancel: cancel}, nil
}

// follow reads events until the watch ends (server timeout, connection lost, an error event)
// or ctx ends.
func follow(ctx context.Context, events watch.Interface, notify func()) {
	defer events.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-events.ResultChan():
			if !ok {
				return
			}
			notify()
			if ev.Type == watch.Error {
				return
			}
		}
	}
}

// stopOnCancel also cancels the watch's request context when it is stopped.
type stopOnCancel struct {
	watch.Interface
	cancel context.CancelFunc
}

func (s stopOnCancel) Stop() { s.Interface.Stop(); s.cancel() }

// timeoutSeconds sets the server-side timeout of a watch.
type timeoutSeconds int64

func (t timeoutSeconds) ApplyToList(o *client.ListOptions) {
	if o.Raw == nil {
		o.Raw = &metav1.ListOptions{}
	}
	s := int64(t)
	o.Raw.TimeoutSeconds = &s
}
