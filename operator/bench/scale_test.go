package bench

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/operator/internal/optest"
)

// scaleW is the large size of BenchmarkConvergeAtScale: the Workloads, and the foreign
// Deployments and EndpointSlices beside them; POLYKUBE_BENCH_W overrides it (a quick run:
// POLYKUBE_BENCH_W=2000).
var scaleW = envInt("POLYKUBE_BENCH_W", 10000, 1)

// churnPerSecond is how many foreign Deployments, and as many foreign EndpointSlices, the churn
// driver changes per second while BenchmarkConvergeAtScale measures: the same noise for the
// plain client and the operator.
const churnPerSecond = 50

// scaleEnv is an API server of its own, so that the other benchmarks' objects are not counted.
var scaleEnv optest.Env

// BenchmarkConvergeAtScale is issue 40's goal 1: the operator at W Workloads (POLYKUBE_BENCH_W,
// default 10,000) in a noisy cluster, W foreign Deployments and W foreign EndpointSlices present
// and churnPerSecond of each changed every second throughout. At count (1,000) Workloads and
// then at W, it times
//  1. a plain client making the operator's writes (a Deployment create and a status patch per
//     Workload, with the operator's number of workers; plainWrites);
//  2. the operator, started with the Workloads already applied, until every Deployment exists
//     and until every status is written (T);
//
// and counts the Workload controller's reconciles (one per Workload is the start-up's; any more
// were caused by something else, the foreign churn included) and the operator's writes in a
// steady-state window with the churn going on. It prints T / plain at each size (goal <= 1.2)
// and T(W) / T(count) (goal <= 1.1 × W/count: 11 for 10,000 against 1,000). Figures are printed,
// not asserted.
func BenchmarkConvergeAtScale(b *testing.B) {
	base, shared := scaleEnv.Start(b)
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: shared.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	createRoster(b, c)
	noise := optest.Namespace(b, c, "noise")
	start := time.Now()
	apply(b, scaleW, func(i int) client.Object { return optest.ForeignDeployment(noise, foreignName(i)) }, c)
	apply(b, scaleW, func(i int) client.Object { return optest.ForeignSlice(noise, foreignName(i)) }, c)
	created := time.Since(start)

	stop := churn(b, c, noise, scaleW)
	b.Cleanup(func() { stop() }) // also when a wait fails
	small := convergeAt(b, cfg, c, count)
	large := convergeAt(b, cfg, c, scaleW)
	changed := stop()

	fmt.Printf("\nPolykube operator at scale (one kube-apiserver; %d foreign Deployments and %d foreign EndpointSlices, created in %.1fs, %d of each changed per second: %d changes in all; %d reconcile workers)\n",
		scaleW, scaleW, created.Seconds(), churnPerSecond, changed, reconcileWorkers)
	for _, r := range []scaleRun{small, large} {
		fmt.Printf("  W=%d plain client: %d Deployment creates + %d status patches %7.2fs\n", r.n, r.n, r.n, r.plain.Seconds())
		fmt.Printf("  W=%d operator started -> %d Deployments %7.2fs, -> every status written %7.2fs; %d API writes (%.2f per Workload)\n",
			r.n, r.n, r.deployments.Seconds(), r.statuses.Seconds(), r.writes, float64(r.writes)/float64(r.n))
		fmt.Printf("  W=%d operator (started -> every status) / plain = %.2f (goal <= 1.2)\n", r.n, r.statuses.Seconds()/r.plain.Seconds())
		fmt.Printf("  W=%d workload reconciles %d, beyond one per Workload %d (goal 0: none caused by foreign objects)\n",
			r.n, r.reconciles, r.reconciles-r.n)
		fmt.Printf("  W=%d operator API writes in a %v steady state with the churn going on %d (goal 0)\n", r.n, steadyStateWindow, r.steady)
		fmt.Printf("  W=%d operator heap above the process %.1f MiB; process RSS %.1f MiB (operator and test client)\n",
			r.n, float64(r.operator.heap-min(r.operator.heap, r.process.heap))/(1<<20), float64(r.operator.rss)/(1<<20))
	}
	scale := float64(scaleW) / float64(count)
	fmt.Printf("  T(%d)/T(%d) = %.2f (goal <= %.0f); plain(%d)/plain(%d) = %.2f\n", scaleW, count,
		large.statuses.Seconds()/small.statuses.Seconds(), 1.1*scale, scaleW, count, large.plain.Seconds()/small.plain.Seconds())
	fmt.Println()

	b.ReportMetric(small.statuses.Seconds()/small.plain.Seconds(), "operator-vs-plain-small")
	b.ReportMetric(large.statuses.Seconds()/large.plain.Seconds(), "operator-vs-plain-large")
	b.ReportMetric(large.statuses.Seconds()/small.statuses.Seconds(), "T-large/T-small")
	b.ReportMetric(float64(large.reconciles-large.n), "extra-reconciles-large")
}

// scaleRun is what convergeAt measured at n Workloads.
type scaleRun struct {
	n                            int
	plain, deployments, statuses time.Duration
	writes, reconciles, steady   int
	// process is the process before the operator started, operator once it had converged.
	process, operator mem
}

// convergeAt times the plain client's writes for n Workloads, then the operator's catch-up on n
// Workloads applied while it was not running; it stops the operator and deletes the Workloads
// and Deployments afterwards.
func convergeAt(b *testing.B, cfg *rest.Config, c client.WithWatch, n int) scaleRun {
	b.Helper()
	r := scaleRun{n: n}
	r.plain, _ = plainWrites(b, cfg, c, n)
	ns := optest.Namespace(b, c, "scale")
	apply(b, n, func(i int) client.Object { return workload(ns, i) }, c)
	r.process = memNow(b)
	before := reconciles(b, "workload")
	start := time.Now()
	op := optest.StartOperator(b, cfg, "bench", optest.Options{MaxConcurrentReconciles: reconcileWorkers, ProductionLogLevel: true})
	waitForDeployments(b, c, ns, n)
	r.deployments = time.Since(start)
	waitForStatuses(b, c, ns, n)
	r.statuses = time.Since(start)
	r.writes = op.Writes.Writes()
	quiet(b, op)
	r.reconciles = int(reconciles(b, "workload") - before)
	r.operator = memNow(b)
	op.Writes.Reset()
	time.Sleep(steadyStateWindow) // the measurement window itself
	r.steady = op.Writes.Writes()
	op.Stop(b)
	deleteAll(b, c, ns)
	return r
}

// churn changes churnPerSecond of the n foreign Deployments and as many of their EndpointSlices
// every second (a label each, as a rollout or a pod moving would change them) until the
// returned function is called; that function returns how many objects were changed.
func churn(b *testing.B, c client.Client, ns string, n int) func() int {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var changed, failed atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(time.Second / churnPerSecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			}
			name := foreignName(i % n)
			rev := strconv.Itoa(i/n + 2)
			for _, obj := range []client.Object{&appsv1.Deployment{}, &discoveryv1.EndpointSlice{}} {
				key := client.ObjectKey{Namespace: ns, Name: name}
				if _, ok := obj.(*discoveryv1.EndpointSlice); ok {
					key.Name = name + "-abcde"
				}
				obj.SetNamespace(ns)
				obj.SetName(key.Name)
				patch := client.RawPatch(client.Merge.Type(), fmt.Appendf(nil, `{"metadata":{"labels":{"revision":%q}}}`, rev))
				if err := c.Patch(ctx, obj, patch); err == nil {
					changed.Add(1)
				} else if ctx.Err() == nil && failed.Add(1) <= 5 {
					b.Logf("churn: patch %T %s: %v", obj, key, err)
				}
			}
		}
	})
	var once sync.Once
	return func() int {
		once.Do(func() {
			cancel()
			wg.Wait()
		})
		return int(changed.Load())
	}
}
