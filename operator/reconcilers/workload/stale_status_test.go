package workload_test

import (
	"context"
	"sync"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
	wlreconciler "github.com/polykube/polykube/operator/reconcilers/workload"
)

// laggingClient reads Workloads from a frozen copy while frozen, as a cache that has not yet
// seen the latest writes does; everything else goes to the API server.
type laggingClient struct {
	client.Client
	mu     sync.Mutex
	frozen *polykubev1alpha1.Workload
}

func (l *laggingClient) freeze(w *polykubev1alpha1.Workload) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.frozen = w.DeepCopy()
}

func (l *laggingClient) catchUp() { l.freeze(nil) }

func (l *laggingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	l.mu.Lock()
	frozen := l.frozen
	l.mu.Unlock()
	if w, ok := obj.(*polykubev1alpha1.Workload); ok && frozen != nil && key == client.ObjectKeyFromObject(frozen) {
		frozen.DeepCopyInto(w)
		return nil
	}
	return l.Client.Get(ctx, key, obj, opts...)
}

// TestReconciler_status_laggingCache: the status flips A→B→A while the reconciler's reads lag
// behind. The reconcile that reads the stale copy (status A, written before B) must not take
// "A is unchanged" for the truth, nor write from the stale copy; it asks to run again, and
// once the cache has caught up the server shows A. A status computed from a copy older than a
// change someone else made is refused by the API server (optimistic lock) and retried.
func TestReconciler_status_laggingCache(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	const cluster, ns = "lagging", "stale-status"
	Expect(client.IgnoreAlreadyExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	wl := workload(ns, "flip", nil)
	wl.Spec.Distribution.Targets = []polykubev1alpha1.DistributionTarget{{ClusterRef: cluster, Replicas: ptrTo(int32(1))}}
	Expect(c.Create(ctx, wl)).To(Succeed())

	lag := &laggingClient{Client: c}
	r := &wlreconciler.Reconciler{Client: lag, Scheme: c.Scheme(), ClusterName: cluster}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wl)}
	readyReason := func() string {
		got := &polykubev1alpha1.Workload{}
		Expect(c.Get(ctx, req.NamespacedName, got)).To(Succeed())
		if cond := meta.FindStatusCondition(got.Status.Conditions, polykubev1alpha1.ReadyCondition); cond != nil {
			return cond.Reason
		}
		return ""
	}
	member := optest.ClusterMember(cluster, 77)

	// A: no ClusterMember for this operator.
	_, err := r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(readyReason()).To(Equal(polykubev1alpha1.ReasonClusterUnknown))
	atA := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, req.NamespacedName, atA)).To(Succeed())

	// B: the ClusterMember appears; the Deployment is created.
	Expect(c.Create(ctx, member)).To(Succeed())
	_, err = r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(readyReason()).NotTo(Equal(polykubev1alpha1.ReasonClusterUnknown))

	// Back to A, read through a cache still holding the copy from before B.
	Expect(c.Delete(ctx, member)).To(Succeed())
	lag.freeze(atA)
	res, err := r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.RequeueAfter).To(BeNumerically(">", 0),
		"a reconcile that read a copy older than its own last status write must run again: nothing else will (status events are filtered out)")
	lag.catchUp()
	_, err = r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(readyReason()).To(Equal(polykubev1alpha1.ReasonClusterUnknown), "the final status is A")

	// Someone else changes the Workload; a reconcile still reading the older copy computes a
	// different status (the ClusterMember is back): the API server refuses that write.
	stale := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, req.NamespacedName, stale)).To(Succeed())
	changed := stale.DeepCopy()
	changed.Annotations = map[string]string{"example.com/touched": "yes"}
	Expect(c.Update(ctx, changed)).To(Succeed())
	member = optest.ClusterMember(cluster, 77)
	Expect(c.Create(ctx, member)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), member) })
	lag.freeze(stale)
	res, err = r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred(), "a refused stale write is retried, not reported as a failure")
	Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	Expect(readyReason()).To(Equal(polykubev1alpha1.ReasonClusterUnknown), "the write computed from the stale copy was refused")
	lag.catchUp()
	_, err = r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(readyReason()).NotTo(Equal(polykubev1alpha1.ReasonClusterUnknown), "once the cache caught up, the status is written")
}

func ptrTo[T any](v T) *T { return &v }
