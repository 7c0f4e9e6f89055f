package bench

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
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
var foreignCount = func() int {
	if n, err := strconv.Atoi(os.Getenv("POLYKUBE_BENCH_FOREIGN")); err == nil && n > 0 {
		return n
	}
	return 10000
}()

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
	base, c := foreignEnv.Start(b)
	ctx := context.Background()
	cfg := rest.CopyConfig(base)
	cfg.QPS, cfg.Burst = -1, 0
	c, err := client.New(cfg, client.Options{Scheme: c.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, optest.ClusterMember("bench", 1)); err != nil {
		b.Fatal(err)
	}
	mine := optest.Namespace(b, c, "mine")
	apply(b, ownWorkloads, func(i int) client.Object { return workload(mine, i) }, c)
	sentinel := foreignDeployment(mine, "sentinel")
	if err := c.Create(ctx, sentinel); err != nil {
		b.Fatal(err)
	}
	if err := c.Create(ctx, workloadNamed(mine, "sentinel")); err != nil {
		b.Fatal(err)
	}
	process := memNow(b)

	others := optest.Namespace(b, c, "others")
	start := time.Now()
	apply(b, foreignCount, func(i int) client.Object { return foreignDeployment(others, foreignName(i)) }, c)
	apply(b, foreignCount, func(i int) client.Object { return foreignService(others, foreignName(i)) }, c)
	apply(b, foreignCount, func(i int) client.Object { return foreignSlice(others, foreignName(i)) }, c)
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
		start(cache.Options{DefaultTransform: unmanaged.Transform}, extra)
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

func foreignDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels,
			// kubectl apply's copy of the object, as most objects in a cluster carry it.
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": fmt.Sprintf(
				`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":%q,"namespace":%q},"spec":{"replicas":1}}`, name, ns)}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/other:1"}}},
			},
		},
	}
}

// foreignService is headless: the test API server's Service range has room for 254 cluster IPs.
func foreignService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 8080}}},
	}
}

// foreignSlice is the slice the EndpointSlice controller keeps for a foreign Service.
func foreignSlice(ns, name string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io", "app": name,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"10.9.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)},
			TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: name + "-pod"}}},
	}
}

// workloadNamed is a Workload like workload's, named name.
func workloadNamed(ns, name string) *polykubev1alpha1.Workload {
	w := workload(ns, 0)
	w.Name = name
	w.Spec.Template.Labels = map[string]string{"app": name}
	return w
}
