package bench

import (
	"bufio"
	"cmp"
	"context"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	apiruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/apicount"
	"github.com/polykube/polykube/operator/internal/flags"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/placement"
)

// envInt is the whole number the environment variable name gives, when it is at least least;
// else def.
func envInt(name string, def, least int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n >= least {
		return n
	}
	return def
}

// count is the number of Workloads (and Deployments); POLYKUBE_BENCH_COUNT overrides it.
var count = envInt("POLYKUBE_BENCH_COUNT", 1000, 1)

// reconcileWorkers is the operator's --max-concurrent-reconciles (its default unless
// POLYKUBE_BENCH_WORKERS overrides it).
var reconcileWorkers = envInt("POLYKUBE_BENCH_WORKERS", flags.DefaultMaxConcurrentReconciles, 1)

const (
	applyWorkers      = 8
	steadyStateWindow = 5 * time.Second
)

// convergeTimeout is how long a wait for n objects may take: two minutes, and a tenth of a
// second more per object (W = 10,000 on two busy cores).
func convergeTimeout(n int) time.Duration {
	return 2*time.Minute + time.Duration(n)*100*time.Millisecond
}

var env optest.Env

func TestMain(m *testing.M) {
	code := m.Run()
	env.Stop()
	foreignEnv.Stop()
	scaleEnv.Stop()
	os.Exit(code)
}

// BenchmarkConverge1000Workloads runs once whatever b.N is (one run takes a minute or two):
//  1. direct: applies 1,000 Deployments and times it;
//  2. catch-up: applies 1,000 Workloads while no operator runs (timed: the API server's own cost
//     of the CRD), then starts the operator and times until their 1,000 Deployments exist — the
//     operator's own overhead, comparable with (1);
//  3. end to end: with the operator running, applies 1,000 more Workloads and times until their
//     Deployments exist — what a GitOps rollout of Workloads costs compared with (1);
//  4. counts the operator's API writes over a steady-state window (2,000 Workloads);
//  5. reads the process RSS (the operator runs in-process, beside the test's client);
//  6. like for like: before the operator starts, a plain client makes the writes the operator
//     makes for 1,000 Workloads — a Deployment create and a Workload status patch each, with the
//     operator's parallelism — and the operator's catch-up time (operator started → every status
//     written) is divided by that. This is the figure that measures the operator itself: (1)
//     compares two writes with one.
//
// The roster holds the three clusters the Workloads target (createRoster), and the waits follow
// a watch (waitFor) rather than LIST the objects every 50 ms, so that the operator is timed
// doing what the plain client does and no more. The figures are printed, not asserted; the
// like-for-like goal is at most 1.2.
func BenchmarkConverge1000Workloads(b *testing.B) {
	base, shared := env.Start(b)
	// No client-side rate limit, as in production (controller-runtime's GetConfig sets QPS -1).
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: shared.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	createRoster(b, c)

	// 1. Direct.
	directNS := optest.Namespace(b, c, "direct")
	start := time.Now()
	apply(b, count, func(i int) client.Object { return deployment(directNS, i) }, c)
	waitForDeployments(b, c, directNS, count)
	direct := time.Since(start)

	// 6 (measured here, before any operator runs): the operator's writes, made by a plain client.
	plain, plainLatencies := plainWrites(b, cfg, c, count)

	// 2. Catch-up.
	catchUpNS := optest.Namespace(b, c, "catchup")
	start = time.Now()
	apply(b, count, func(i int) client.Object { return workload(catchUpNS, i) }, c)
	workloadsOnly := time.Since(start)
	start = time.Now()
	op := optest.StartOperator(b, cfg, "bench", optest.Options{MaxConcurrentReconciles: reconcileWorkers, ProductionLogLevel: true})
	waitForDeployments(b, c, catchUpNS, count)
	catchUp := time.Since(start)
	waitForStatuses(b, c, catchUpNS, count)
	catchUpStatuses := time.Since(start)
	catchUpWrites, catchUpLatencies := op.Writes.Writes(), op.Writes.WriteLatencies()
	checkDeployments(b, c, catchUpNS)
	quiet(b, op)

	// 3. End to end.
	e2eNS := optest.Namespace(b, c, "endtoend")
	op.Writes.Reset()
	start = time.Now()
	apply(b, count, func(i int) client.Object { return workload(e2eNS, i) }, c)
	applied := time.Since(start)
	waitForDeployments(b, c, e2eNS, count)
	endToEnd := time.Since(start)
	e2eWrites := op.Writes.Writes()
	checkDeployments(b, c, e2eNS)

	// 4. Steady state: let the last writes settle, then count writes over a window.
	quiet(b, op)
	op.Writes.Reset()
	time.Sleep(steadyStateWindow) // the measurement window itself
	steadyWrites := op.Writes.Writes()

	// 5. Memory.
	rss := vmRSS(b)
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)

	ratio, e2eRatio := catchUp.Seconds()/direct.Seconds(), endToEnd.Seconds()/direct.Seconds()
	fair := catchUpStatuses.Seconds() / plain.Seconds()
	fmt.Printf("\nPolykube operator benchmark (one kube-apiserver, %d objects, %d apply workers, %d reconcile workers)\n", count, applyWorkers, reconcileWorkers)
	fmt.Printf("  1 direct: %d Deployments applied                    %7.2fs\n", count, direct.Seconds())
	fmt.Printf("  2 %d Workloads applied, no operator running        %7.2fs  (%.1fx: the API server's cost of the CRD)\n", count, workloadsOnly.Seconds(), workloadsOnly.Seconds()/direct.Seconds())
	fmt.Printf("    operator started -> %d Deployments               %7.2fs  ratio %.2f (goal <= 1.5)\n", count, catchUp.Seconds(), ratio)
	fmt.Printf("    operator started -> every status written          %7.2fs  %d API writes (%.1f per Workload)\n", catchUpStatuses.Seconds(), catchUpWrites, float64(catchUpWrites)/float64(count))
	fmt.Printf("  3 %d Workloads applied -> %d Deployments         %7.2fs  ratio %.2f (applying took %.2fs; %d operator writes)\n", count, count, endToEnd.Seconds(), e2eRatio, applied.Seconds(), e2eWrites)
	fmt.Printf("  4 operator API writes in a %v steady state          %7d  %v\n", steadyStateWindow, steadyWrites, op.Writes.WriteSummary())
	fmt.Printf("  6 plain client: %d Deployment creates + %d status patches %7.2fs  operator (started -> every status) / plain = %.2f (goal <= 1.2)\n", count, count, plain.Seconds(), fair)
	fmt.Printf("  5 process RSS (operator + test client)            %7.1f MiB (Go heap in use %.1f MiB)\n", float64(rss)/(1<<20), float64(ms.HeapInuse)/(1<<20))
	for _, l := range plainLatencies {
		fmt.Printf("    plain client write latency: %s\n", l)
	}
	for _, l := range catchUpLatencies {
		fmt.Printf("    catch-up write latency: %s\n", l)
	}
	for _, l := range controllerTimes(b) {
		fmt.Printf("    %s\n", l)
	}
	fmt.Println()

	b.ReportMetric(direct.Seconds(), "direct-s")
	b.ReportMetric(workloadsOnly.Seconds(), "workloads-only-s")
	b.ReportMetric(catchUp.Seconds(), "operator-s")
	b.ReportMetric(ratio, "ratio")
	b.ReportMetric(e2eRatio, "e2e-ratio")
	b.ReportMetric(plain.Seconds(), "plain-writes-s")
	b.ReportMetric(fair, "operator-vs-plain")
	b.ReportMetric(float64(steadyWrites), "steady-writes")
	b.ReportMetric(float64(rss)/(1<<20), "rss-MiB")
}

// createRoster creates the ClusterMembers of the fleet the benchmark's Workloads target: this
// cluster ("bench") and its two peers. Without the peers every Workload would report
// TargetsKnown=False and the operator would record a Warning event for each, a write per
// Workload that a fleet whose roster is complete does not make.
func createRoster(b *testing.B, c client.Client) {
	b.Helper()
	for i, name := range []string{"bench", "peer-a", "peer-b"} {
		if err := c.Create(context.Background(), optest.ClusterMember(name, int32(i+1))); err != nil {
			b.Fatal(err)
		}
	}
}

// plainWrites times a plain client making, for n Workloads that already exist, the two
// writes the operator makes for each (create its Deployment, patch its status) with the
// operator's number of workers, and returns the mean latency of its writes. The Workloads are
// applied before the clock starts, and everything is deleted afterwards so that the operator
// started later never sees them.
func plainWrites(b *testing.B, cfg *rest.Config, c client.WithWatch, n int) (time.Duration, []string) {
	b.Helper()
	ctx := context.Background()
	ns := optest.Namespace(b, c, "plain")
	apply(b, n, func(i int) client.Object { return workload(ns, i) }, c)
	counter := &apicount.Counter{}
	pc, err := client.New(counter.Wrap(cfg), client.Options{Scheme: c.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	list := &polykubev1alpha1.WorkloadList{}
	if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	if len(list.Items) != n {
		b.Fatalf("plain writes: %d Workloads in %s, want %d", len(list.Items), ns, n)
	}
	wls := make([]*polykubev1alpha1.Workload, n)
	for i := range list.Items {
		var idx int
		if _, err := fmt.Sscanf(list.Items[i].Name, "app-%d", &idx); err != nil || idx >= n {
			b.Fatalf("plain writes: unexpected Workload %s", list.Items[i].Name)
		}
		wls[idx] = &list.Items[i]
	}
	// The operator is timed until the benchmark's watch has seen every Deployment, then every
	// status; so is the plain client, with the same watch running beside its writes.
	start := time.Now()
	seen := make(chan error, 1)
	go func() {
		seen <- watchUntil(c, &appsv1.DeploymentList{}, ns, n, func(client.Object) bool { return true })
	}()
	parallel(b, n, reconcileWorkers, func(i int) error {
		wl := wls[i]
		d := deployment(ns, i)
		d.Spec.Replicas = ptr.To[int32](2)
		d.OwnerReferences = []metav1.OwnerReference{{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload",
			Name: wl.Name, UID: wl.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}
		if err := pc.Create(ctx, d); err != nil {
			return err
		}
		before := wl.DeepCopy()
		wl.Status = representativeStatus(wl)
		return pc.Status().Patch(ctx, wl, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{}))
	})
	if err := <-seen; err != nil {
		b.Fatalf("plain writes: waiting for their Deployments: %v", err)
	}
	waitForStatuses(b, c, ns, n)
	took := time.Since(start)
	deleteAll(b, c, ns)
	return took, counter.WriteLatencies()
}

// deleteAll deletes the Workloads and Deployments of namespace ns (no garbage collector runs
// beside the test API server). A collection of 10,000 may take the API server longer than its
// request timeout on a busy machine; what it deleted by then stays deleted, so it is asked again.
func deleteAll(b *testing.B, c client.Client, ns string) {
	b.Helper()
	ctx := context.Background()
	for _, kind := range []struct {
		obj  client.Object
		list client.ObjectList
	}{{&polykubev1alpha1.Workload{}, &polykubev1alpha1.WorkloadList{}}, {&appsv1.Deployment{}, &appsv1.DeploymentList{}}} {
		var err error
		for range 10 {
			if err = c.DeleteAllOf(ctx, kind.obj, client.InNamespace(ns)); err == nil {
				break
			}
			if lerr := c.List(ctx, kind.list, client.InNamespace(ns), client.Limit(1)); lerr == nil && meta.LenList(kind.list) == 0 {
				err = nil
				break
			}
		}
		if err != nil {
			b.Fatalf("delete every %T in %s: %v", kind.obj, ns, err)
		}
	}
}

// representativeStatus is the status the operator writes for a freshly created slice: the
// same fields, so the plain client's patches are as large as the operator's.
func representativeStatus(wl *polykubev1alpha1.Workload) polykubev1alpha1.WorkloadStatus {
	now := metav1.Now()
	st := polykubev1alpha1.WorkloadStatus{Cluster: "bench", SpecHash: "0123456789abcdef", ObservedGeneration: wl.Generation, DesiredReplicas: 2}
	var alloc placement.Allocation
	for _, t := range wl.Spec.Distribution.Targets {
		alloc = append(alloc, placement.Share{Cluster: t.ClusterRef, Replicas: 2})
	}
	st.Local = &polykubev1alpha1.TargetStatus{Cluster: alloc[0].Cluster, DesiredReplicas: 2, Local: true, Phase: "Progressing",
		ObservedGeneration: wl.Generation, LastUpdateTime: &now}
	st.Allocation = &polykubev1alpha1.AllocationDigest{Digest: placement.AllocationDigest(alloc), Targets: int32(len(alloc)), TargetsWithReplicas: int32(len(alloc))}
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: polykubev1alpha1.AllocatedCondition, Status: metav1.ConditionTrue,
		Reason: polykubev1alpha1.ReasonSucceeded, Message: "replicas per cluster: bench=2, peer-a=2, peer-b=2", ObservedGeneration: wl.Generation})
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: polykubev1alpha1.TargetsKnownCondition, Status: metav1.ConditionTrue,
		Reason: polykubev1alpha1.ReasonSucceeded, Message: "every cluster spec.distribution.targets names has a ClusterMember in this cluster's roster",
		ObservedGeneration: wl.Generation})
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
		Reason: polykubev1alpha1.ReasonDeploymentPending, Message: "the Deployment has 0 of 2 replicas ready", ObservedGeneration: wl.Generation})
	return st
}

// parallel runs fn(0..n-1) on workers goroutines and fails on the first error.
func parallel(b *testing.B, n, workers int, fn func(int) error) {
	b.Helper()
	next := make(chan int)
	var (
		wg       sync.WaitGroup
		mu       sync.Mutex
		firstErr error
	)
	for range workers {
		wg.Go(func() {
			for i := range next {
				if err := fn(i); err != nil {
					mu.Lock()
					firstErr = cmp.Or(firstErr, err)
					mu.Unlock()
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if firstErr != nil {
		b.Fatalf("plain writes: %v", firstErr)
	}
}

func deployment(ns string, i int) *appsv1.Deployment {
	name := fmt.Sprintf("app-%04d", i)
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}}},
			},
		},
	}
}

func workload(ns string, i int) *polykubev1alpha1.Workload {
	name := fmt.Sprintf("app-%04d", i)
	return &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: polykubev1alpha1.WorkloadSpec{
			Distribution: polykubev1alpha1.Distribution{
				Strategy: polykubev1alpha1.StrategyMultiCloudWeighted,
				Replicas: ptr.To[int32](6),
				Targets: []polykubev1alpha1.DistributionTarget{
					{ClusterRef: "bench", Weight: ptr.To[int32](1)},
					{ClusterRef: "peer-a", Weight: ptr.To[int32](1)},
					{ClusterRef: "peer-b", Weight: ptr.To[int32](1)},
				},
			},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}}},
			},
		},
	}
}

// apply creates n objects with applyWorkers in parallel.
func apply(b *testing.B, n int, obj func(int) client.Object, c client.Client) {
	b.Helper()
	next := make(chan int)
	errs := make(chan error, applyWorkers)
	var wg sync.WaitGroup
	for range applyWorkers {
		wg.Go(func() {
			for i := range next {
				if err := c.Create(context.Background(), obj(i)); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for i := range n {
		select {
		case next <- i:
		case err := <-errs:
			b.Fatalf("apply: %v", err)
		}
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		b.Fatalf("apply: %v", err)
	default:
	}
}

func poll(b *testing.B, what string, done func(context.Context) (bool, error)) {
	b.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, convergeTimeout(count), true, done)
	if err != nil {
		b.Fatalf("waiting for %s: %v", what, err)
	}
}

// waitFor waits until n objects of list's kind in namespace ns satisfy done (watchUntil).
func waitFor(b *testing.B, c client.WithWatch, what string, list client.ObjectList, ns string, n int, done func(client.Object) bool) {
	b.Helper()
	if err := watchUntil(c, list, ns, n, done); err != nil {
		b.Fatalf("waiting for %s: %v", what, err)
	}
}

// watchUntil returns once n objects of list's kind in namespace ns satisfy done, following one
// watch from one LIST. It does not LIST again and again: at W = 10,000 a LIST every 50 ms would
// be the heaviest load on the API server while the operator is timed. The plain client is timed
// with the same watch running (plainWrites), so both carry the same observer. A watch that ends
// early is resumed from a new LIST.
func watchUntil(c client.WithWatch, list client.ObjectList, ns string, n int, done func(client.Object) bool) error {
	ctx, cancel := context.WithTimeout(context.Background(), convergeTimeout(n))
	defer cancel()
	for {
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return err
		}
		met := map[string]bool{}
		if err := meta.EachListItem(list, func(o apiruntime.Object) error {
			if obj := o.(client.Object); done(obj) {
				met[obj.GetName()] = true
			}
			return nil
		}); err != nil {
			return err
		}
		if len(met) >= n {
			return nil
		}
		w, err := c.Watch(ctx, list, client.InNamespace(ns), &client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: list.GetResourceVersion()}})
		if err != nil {
			return fmt.Errorf("watch: %w", err)
		}
		for ev := range w.ResultChan() {
			obj, ok := ev.Object.(client.Object)
			if !ok || ev.Type == watch.Error || ev.Type == watch.Bookmark {
				continue
			}
			if ev.Type != watch.Deleted && done(obj) {
				met[obj.GetName()] = true
			} else {
				delete(met, obj.GetName())
			}
			if len(met) >= n {
				w.Stop()
				return nil
			}
		}
		w.Stop()
		if ctx.Err() != nil {
			return fmt.Errorf("%d after %v", len(met), convergeTimeout(n))
		}
	}
}

func waitForDeployments(b *testing.B, c client.WithWatch, ns string, n int) {
	b.Helper()
	waitFor(b, c, fmt.Sprintf("%d Deployments in %s", n, ns), &appsv1.DeploymentList{}, ns, n, func(client.Object) bool { return true })
}

func waitForStatuses(b *testing.B, c client.WithWatch, ns string, n int) {
	b.Helper()
	waitFor(b, c, fmt.Sprintf("%d Workload statuses in %s", n, ns), &polykubev1alpha1.WorkloadList{}, ns, n, func(o client.Object) bool {
		cond := meta.FindStatusCondition(o.(*polykubev1alpha1.Workload).Status.Conditions, polykubev1alpha1.ReadyCondition)
		return cond != nil && cond.Reason == polykubev1alpha1.ReasonDeploymentPending
	})
}

func checkDeployments(b *testing.B, c client.Client, ns string) {
	b.Helper()
	list := &appsv1.DeploymentList{}
	if err := c.List(context.Background(), list, client.InNamespace(ns)); err != nil {
		b.Fatal(err)
	}
	if len(list.Items) != count {
		b.Fatalf("%d Deployments, want %d", len(list.Items), count)
	}
	for _, d := range list.Items {
		if *d.Spec.Replicas != 2 {
			b.Fatalf("Deployment %s has %d replicas, want 2 (6 split over 3 equal weights)", d.Name, *d.Spec.Replicas)
		}
	}
}

// quiet waits until the operator has written nothing for one second.
func quiet(b *testing.B, op *optest.Operator) {
	b.Helper()
	last := -1
	poll(b, "the operator to stop writing", func(context.Context) (bool, error) {
		n := op.Writes.Writes()
		if n == last {
			return true, nil
		}
		last = n
		time.Sleep(time.Second)
		return false, nil
	})
}

// vmRSS reads this process's resident set size from /proc/self/status.
func vmRSS(b *testing.B) int64 {
	b.Helper()
	f, err := os.Open("/proc/self/status")
	if err != nil {
		b.Logf("read RSS: %v", err)
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmRSS:"); ok {
			var kb int64
			if _, err := fmt.Sscanf(strings.TrimSpace(rest), "%d kB", &kb); err == nil {
				return kb * 1024
			}
		}
	}
	return 0
}

// controllerTimes summarizes controller-runtime's reconcile and work queue histograms per
// controller: where the time went.
func controllerTimes(b *testing.B) []string {
	b.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Logf("gather metrics: %v", err)
		return nil
	}
	var out []string
	for _, f := range families {
		name := f.GetName()
		if name == "controller_runtime_reconcile_total" {
			for _, m := range f.GetMetric() {
				if v := m.GetCounter().GetValue(); v > 0 {
					var labels []string
					for _, l := range m.GetLabel() {
						labels = append(labels, l.GetName()+"="+l.GetValue())
					}
					out = append(out, fmt.Sprintf("%-42s %-40s %.0f", name, strings.Join(labels, ","), v))
				}
			}
			continue
		}
		if name != "controller_runtime_reconcile_time_seconds" && name != "workqueue_queue_duration_seconds" {
			continue
		}
		for _, m := range f.GetMetric() {
			h := m.GetHistogram()
			if h.GetSampleCount() == 0 {
				continue
			}
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			out = append(out, fmt.Sprintf("%-42s %-40s n=%-6d mean=%.1fms", name, strings.Join(labels, ","),
				h.GetSampleCount(), 1000*h.GetSampleSum()/float64(h.GetSampleCount())))
		}
	}
	return out
}
