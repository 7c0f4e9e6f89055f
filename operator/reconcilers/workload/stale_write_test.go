package workload_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
	wlreconciler "github.com/polykube/polykube/operator/reconcilers/workload"
)

// Issue 33, defect 9: a reconcile that reads a Workload older than its own last status write
// (the cache lags) must not act on it. The check ran only when the status was written, after
// the Deployment had been written from the stale copy: an old spec or failover state could
// scale the Deployment and, a second later, back.
func TestReconciler_laggingCache_noDeploymentWriteFromStaleCopy(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	const cluster = "lagging-write"
	ns := optest.Namespace(t, c, "stale-write")
	member := optest.ClusterMember(cluster, 78)
	Expect(c.Create(ctx, member)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), member) })
	wl := workload(ns, "api", nil)
	wl.Spec.Distribution.Targets = []polykubev1alpha1.DistributionTarget{{ClusterRef: cluster, Replicas: ptrTo(int32(1))}}
	Expect(c.Create(ctx, wl)).To(Succeed())

	lag := &laggingClient{Client: c}
	r := &wlreconciler.Reconciler{Client: lag, Scheme: c.Scheme(), ClusterName: cluster}
	req := ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wl)}
	_, err := r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(*getDeployment(Default, c, ns, "api").Spec.Replicas).To(Equal(int32(1)))
	old := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, req.NamespacedName, old)).To(Succeed())

	// Scaled to 3 in Git; this operator reconciles it and writes the status.
	scaled := old.DeepCopy()
	scaled.Spec.Distribution.Targets[0].Replicas = ptrTo(int32(3))
	Expect(c.Update(ctx, scaled)).To(Succeed())
	_, err = r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	dep := getDeployment(Default, c, ns, "api")
	Expect(*dep.Spec.Replicas).To(Equal(int32(3)))
	w := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, req.NamespacedName, w)).To(Succeed())
	Expect(w.Status.ObservedGeneration).To(Equal(w.Generation), "the status of the scaled Workload was written")

	// A reconcile reads the copy from before both: it must write nothing and run again.
	lag.freeze(old)
	res, err := r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	after := getDeployment(Default, c, ns, "api")
	Expect(*after.Spec.Replicas).To(Equal(int32(3)), "the Deployment was scaled from a Workload copy older than the operator's last status write")
	Expect(after.ResourceVersion).To(Equal(dep.ResourceVersion), "the Deployment was written from a stale copy")
	lag.catchUp()
	_, err = r.Reconcile(ctx, req)
	Expect(err).NotTo(HaveOccurred())
	Expect(*getDeployment(Default, c, ns, "api").Spec.Replicas).To(Equal(int32(3)))
}
