package bench

import (
	"context"
	"fmt"
	"runtime"
	"runtime/debug"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/operator/internal/setup"
	"github.com/polykube/polykube/operator/internal/unmanaged"
)

// foreignCount is the number of foreign objects of each kind (Deployments, Services,
// EndpointSlices); POLYKUBE_BENCH_FOREIGN overrides it.
var foreignCount = envInt("POLYKUBE_BENCH_FOREIGN", 10000, 1)

const (
	// ownWorkloads run beside the foreign objects, so the operator has something to manage.
	ownWorkloads = 100
	// foreignChurn is how many foreign objects of each kind are changed while the reconciles
	// are counted.
	foreignChurn = 1000
)

// foreignEnv is an API server of its own: the other benchmark leaves thousands of Workloads and
// Deployments behind, which would be counted here.
var foreignEnv optest.Env

// BenchmarkForeignObjects measures what a cluster's objects that Polykube did not make cost the
// operator (issue 40, goals 1 and 5). With foreignCount Deployments, Services and EndpointSlices
// of others and ownWorkloads Workloads present, it prints the Go heap (live bytes after a
// collection) and the process RSS of:
//  1. the test process alone (the baseline the others are measured from);
//  2. a bare manager caching every Deployment, Service, HPA and EndpointSlice in full (managed
//     fields stripped): what the operator cached before it cached only what it manages;
//  3. a bare manager with the operator's informers, and no reconciler: the label-selected kinds,
//     the metadata-only cache of foreign objects, the Polykube kinds;
//  4. the operator (setup.New, as the binary runs it), once its Workloads are reconciled;
//
// then, with the operator running, changes foreignChurn objects of each kind and counts the
// Workload controller's reconciles meanwhile (goal 0 caused by them). One sentinel Workload, in
// Conflict with a foreign Deployment that is deleted after the churn, shows that the operator
// has seen the whole churn; its own reconcile is the one expected. Figures are printed, not
// asserted.
func BenchmarkForeignObjects(b *testing.B) {
	base, shared := foreignEnv.Start(b)
	ctx := context.Background()
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.NewWithWatch(cfg, client.Options{Scheme: shared.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, optest.ClusterMember("bench", 1)); err != nil {
		b.Fatal(err)
	}
	mine := optest.Namespace(b, c, "mine")
	apply(b, ownWorkloads, func(i int) client.Object { return workload(mine, i) }, c)
	sentinel := optest.ForeignDeployment(mine, "sentinel")
	if err := c.Create(ctx, sentinel); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, workloadNamed(mine, "sentinel")); err != nil {
		b.Fatal(err)
	}
	process := memNow(b)

	others := optest.Namespace(b, c, "others")
	start := time.Now()
	apply(b, foreignCount, func(i int) client.Object { return optest.ForeignDeployment(others, foreignName(i)) }, c)
	apply(b, foreignCount, func(i int) client.Object { return optest.ForeignService(others, foreignName(i)) }, c)
	apply(b, foreignCount, func(i int) client.Object { return optest.ForeignSlice(others, foreignName(i)) }, c)
	created := time.Since(start)

	everything := bareManager(b, cfg, nil, nil)
	selected := bareManager(b, cfg, setupByObject(), []client.Object{unmanaged.Deployment(), unmanaged.Service(), &autoscalingv2.HorizontalPodAutoscaler{}})

	op := optest.StartOperator(b, cfg, "bench", optest.Options{MaxConcurrentReconciles: reconcileWorkers, ProductionLogLevel: true})
	waitForStatuses(b, c, mine, ownWorkloads)
	operator := memNow(b)

	// The churn, counted.
	churn := min(foreignChurn, foreignCount)
	before := reconciles(b, "workload")
	start = time.Now()
	parallel(b, churn, applyWorkers, func(i int) error {
		name := foreignName(i)
		for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}, &discoveryv1.EndpointSlice{}} {
			key := client.ObjectKey{Namespace: others, Name: name}
			if _, ok := obj.(*discoveryv1.EndpointSlice); ok {
				key.Name = name + "-abcde"
			}
			if err := c.Get(ctx, key, obj); err != nil {
				return err
			}
			patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
			obj.SetLabels(map[string]string{"app": name, "revision": "2"})
			if err := c.Patch(ctx, obj, patch); err != nil {
				return err
			}
		}
		return nil
	})
	if err := c.Delete(ctx, sentinel); err != nil {
		b.Fatal(err)
	}
	poll(b, "the sentinel Workload to leave Conflict", func(ctx context.Context) (bool, error) {
		w := &polykubev1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: mine, Name: "sentinel"}, w); err != nil {
			return false, err
		}
		cond := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.ReadyCondition)
		return cond != nil && cond.Reason == polykubev1alpha1.ReasonDeploymentPending, nil
	})
	churned := time.Since(start)
	quiet(b, op)
	caused := reconciles(b, "workload") - before

	mib := func(v uint64) float64 { return float64(v) / (1 << 20) }
	row := func(what string, m mem) {
		fmt.Printf("    %-64s heap %7.1f MiB (+%6.1f)   RSS %7.1f MiB (+%6.1f)\n", what, mib(m.heap), mib(m.heap)-mib(process.heap),
			mib(m.rss), mib(m.rss)-mib(process.rss))
	}
	fmt.Printf("\nPolykube operator among foreign objects (one kube-apiserver; %d Deployments, %d Services and %d EndpointSlices of others, created in %.1fs; %d Workloads)\n",
		foreignCount, foreignCount, foreignCount, created.Seconds(), ownWorkloads+1)
	row("1 the test process alone", process)
	row("2 bare manager, every Deployment/Service/HPA/EndpointSlice cached", everything)
	row("3 bare manager, the operator's informers (managed only + metadata)", selected)
	row("4 the operator (setup.New), its Workloads reconciled", operator)
	fmt.Printf("    operator / bare manager with the same informers (heap above the process) %.2f (goal <= 1.3)\n",
		ratio(operator.heap-process.heap, selected.heap-process.heap))
	fmt.Printf("    operator heap above the process with %d foreign objects         %7.1f MiB (the memory request sizes from this; gitops/operator)\n",
		3*foreignCount, mib(operator.heap-process.heap))
	fmt.Printf("  workload reconciles while %d foreign objects of each kind changed (%.1fs)   %d, of which the sentinel's 1: caused by foreign objects %d (goal 0)\n",
		churn, churned.Seconds(), int(caused), int(caused)-1)
	fmt.Println()

	b.ReportMetric(mib(operator.heap-process.heap), "operator-heap-MiB")
	b.ReportMetric(mib(everything.heap-process.heap), "cache-everything-heap-MiB")
	b.ReportMetric(caused-1, "foreign-reconciles")
}

// mem is the Go heap (live bytes after a collection) and the RSS of the process.
type mem struct{ heap, rss uint64 }

func memNow(b *testing.B) mem {
	b.Helper()
	runtime.GC()
	debug.FreeOSMemory()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return mem{heap: ms.HeapAlloc, rss: uint64(vmRSS(b))}
}

func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// bareManager starts a cache with informers for the kinds the operator watches (byObject as
// the cache options' ByObject, plus extra informers in a second cache when given), waits until
// it has synced, measures the process, and stops it again.
func bareManager(b *testing.B, cfg *rest.Config, byObject map[client.Object]cache.ByObject, extra []client.Object) mem {
	b.Helper()
	scheme, err := setup.Scheme()
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	start := func(o cache.Options, kinds []client.Object) {
		o.Scheme = scheme
		cc, err := cache.New(cfg, o)
		if err != nil {
			b.Fatal(err)
		}
		go func() { _ = cc.Start(ctx) }()
		for _, k := range kinds {
			if _, err := cc.GetInformer(ctx, k); err != nil {
				b.Fatal(err)
			}
		}
		if !cc.WaitForCacheSync(ctx) {
			b.Fatal("bare manager: the cache did not sync")
		}
	}
	start(cache.Options{DefaultTransform: cache.TransformStripManagedFields(), ByObject: byObject}, []client.Object{
		&appsv1.Deployment{}, &corev1.Service{}, &autoscalingv2.HorizontalPodAutoscaler{}, &discoveryv1.EndpointSlice{},
		&polykubev1alpha1.Workload{}, &polykubev1alpha1.ServiceEndpoint{}, &polykubev1alpha1.DatastoreBinding{},
		&polykubev1alpha1.ClusterMember{}, &polykubev1alpha1.Federation{},
	})
	if extra != nil {
		start(cache.Options{DefaultTransform: unmanaged.Transform, DefaultLabelSelector: unmanaged.NotManaged()}, extra)
	}
	return memNow(b)
}

// setupByObject is the operator's ByObject (setup.managedOnly), rebuilt from what setup exports.
func setupByObject() map[client.Object]cache.ByObject {
	managed := cache.ByObject{Label: setup.ManagedSelector()}
	return map[client.Object]cache.ByObject{
		&appsv1.Deployment{}: managed, &corev1.Service{}: managed,
		&autoscalingv2.HorizontalPodAutoscaler{}: managed, &discoveryv1.EndpointSlice{}: managed,
	}
}

// reconciles is controller-runtime's count of the named controller's reconciles so far.
func reconciles(b *testing.B, controller string) float64 {
	b.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		b.Fatalf("gather metrics: %v", err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "controller" && l.GetValue() == controller {
					n += m.GetCounter().GetValue()
				}
			}
		}
	}
	return n
}

func foreignName(i int) string { return fmt.Sprintf("other-%05d", i) }

// workloadNamed is a Workload like workload's, named name.
func workloadNamed(ns, name string) *polykubev1alpha1.Workload {
	w := workload(ns, 0)
	w.Name = name
	w.Spec.Template.Labels = map[string]string{"app": name}
	return w
}
