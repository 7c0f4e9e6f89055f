package workload_test

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

func patchWorkload(t *testing.T, c client.Client, ns, name string, change func(*polykubev1alpha1.Workload)) {
	t.Helper()
	Eventually(func(g Gomega) {
		w := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(context.Background(), key(ns, name), w)).To(Succeed())
		change(w)
		g.Expect(c.Update(context.Background(), w)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// requestReconcile sets reconcile.polykube.kismet.io/requestedAt to value and waits until the
// operator reports it handled: every event before it has been reconciled.
func requestReconcile(t *testing.T, c client.Client, ns, name, value string) {
	t.Helper()
	patchWorkload(t, c, ns, name, func(w *polykubev1alpha1.Workload) {
		metav1.SetMetaDataAnnotation(&w.ObjectMeta, polykubev1alpha1.ReconcileRequestedAtAnnotation, value)
	})
	Eventually(func(g Gomega) string {
		w := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(context.Background(), key(ns, name), w)).To(Succeed())
		return w.Status.LastHandledReconcileAt
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal(value), "status.lastHandledReconcileAt of %s/%s", ns, name)
}

// A hand fix during an incident: without suspend the operator sets a hand scale back (and
// counts the drift); suspended, the hand scale stays and the operator writes nothing but the
// Workload's status; resumed, the operator sets the Deployment back to the allocation.
func TestReconciler_Suspend_KeepsAHandFixUntilResumed(t *testing.T) {
	c := start(t)
	ns := optest.Namespace(t, c, "suspend")
	op := startOperator(t, east)
	Expect(c.Create(context.Background(), workload(ns, "api", map[string]int32{east: 2, "west": 1}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	replicas := func(g Gomega) int32 { return *getDeployment(g, c, ns, "api").Spec.Replicas }
	Eventually(replicas).WithTimeout(timeout).WithPolling(poll).Should(Equal(int32(2)))

	// Not suspended: a hand scale is reverted, and counted as drift.
	drift := map[string]string{"kind": "Deployment", "field": "replicas"}
	before := counter(t, "polykube_drift_reverted_total", drift)
	scaleByHand(t, c, ns, "api", 5)
	Eventually(replicas).WithTimeout(timeout).WithPolling(poll).Should(Equal(int32(2)), "the operator sets a hand scale back")
	// Counted once the patch has returned to the operator, which may be after the test sees it.
	Eventually(func() float64 { return counter(t, "polykube_drift_reverted_total", drift) }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal(before+1), "polykube_drift_reverted_total{field=replicas}")

	// Suspended: Ready says so; a hand scale stays, through a requested reconcile.
	patchWorkload(t, c, ns, "api", func(w *polykubev1alpha1.Workload) { w.Spec.Suspend = true })
	cond := eventuallyReady(t, c, ns, "api", metav1.ConditionUnknown, polykubev1alpha1.ReasonSuspended)
	Expect(cond.Message).To(ContainSubstring("spec.suspend is true"))
	op.Writes.Reset()
	scaleByHand(t, c, ns, "api", 7)
	requestReconcile(t, c, ns, "api", "2026-12-07T01:00:00Z")
	Expect(replicas(Default)).To(Equal(int32(7)), "a suspended Workload's Deployment keeps the hand scale")
	for _, w := range op.Writes.WriteSummary() {
		Expect(w).To(MatchRegexp(`PATCH .*/workloads/api/status$`), "a suspended Workload gets no write but its status; writes: %v", op.Writes.WriteSummary())
	}

	// Resumed: the operator sets the Deployment back to its allocation.
	patchWorkload(t, c, ns, "api", func(w *polykubev1alpha1.Workload) { w.Spec.Suspend = false })
	Eventually(replicas).WithTimeout(timeout).WithPolling(poll).Should(Equal(int32(2)), "resumed, the operator sets the allocation again")
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	w := &polykubev1alpha1.Workload{}
	Expect(c.Get(context.Background(), key(ns, "api"), w)).To(Succeed())
	Expect(w.Status.LastHandledReconcileAt).To(Equal("2026-12-07T01:00:00Z"))
	Expect(strings.Join(op.Writes.WriteSummary(), "\n")).To(ContainSubstring("deployments"))
}

// A changed reconcile.polykube.kismet.io/requestedAt is a reconcile of its own, though the
// generation does not move: the operator echoes it in status.lastHandledReconcileAt.
func TestReconciler_RequestedAt_ReconcilesAndIsEchoed(t *testing.T) {
	c := start(t)
	ns := optest.Namespace(t, c, "requested")
	startOperator(t, east)
	Expect(c.Create(context.Background(), workload(ns, "api", map[string]int32{east: 1}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	written := map[string]string{"kind": "Workload", "result": "written"}
	before := counter(t, "polykube_status_writes_total", written)
	requestReconcile(t, c, ns, "api", "first")
	requestReconcile(t, c, ns, "api", "second")
	// Each echo is a status write, and polykube_status_writes_total counts it (once the patch
	// has returned to the operator, which may be after the test sees the new status).
	Eventually(func() float64 { return counter(t, "polykube_status_writes_total", written) }).
		WithTimeout(timeout).WithPolling(poll).Should(BeNumerically(">=", before+2))
}

// A suspended DatastoreBinding's status stays as it was (Bound=False/SecretNotFound here, though
// the Secret appears) with Ready=Unknown/Suspended; resumed, it is checked again and bound.
func TestReconciler_SuspendedBinding_IsNotCheckedUntilResumed(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "suspend-binding")
	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "orders", map[string]int32{east: 1}))).To(Succeed())
	Expect(c.Create(ctx, dbBinding(ns, "orders-db"))).To(Succeed())
	eventuallyBound(t, c, ns, metav1.ConditionFalse, polykubev1alpha1.ReasonSecretNotFound)

	update := func(change func(*polykubev1alpha1.DatastoreBinding)) {
		Eventually(func(g Gomega) {
			b := &polykubev1alpha1.DatastoreBinding{}
			g.Expect(c.Get(ctx, key(ns, "orders-db"), b)).To(Succeed())
			change(b)
			g.Expect(c.Update(ctx, b)).To(Succeed())
		}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	}
	readyOf := func(g Gomega) *metav1.Condition {
		b := &polykubev1alpha1.DatastoreBinding{}
		g.Expect(c.Get(ctx, key(ns, "orders-db"), b)).To(Succeed())
		r := meta.FindStatusCondition(b.Status.Conditions, polykubev1alpha1.ReadyCondition)
		g.Expect(r).NotTo(BeNil())
		g.Expect(r.ObservedGeneration).To(Equal(b.Generation))
		return r
	}
	update(func(b *polykubev1alpha1.DatastoreBinding) { b.Spec.Suspend = true })
	Eventually(func(g Gomega) string { return readyOf(g).Reason }).WithTimeout(timeout).WithPolling(poll).Should(Equal(polykubev1alpha1.ReasonSuspended))

	Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-db"},
		StringData: map[string]string{"host": "db", "password": secretValue}})).To(Succeed())
	update(func(b *polykubev1alpha1.DatastoreBinding) {
		metav1.SetMetaDataAnnotation(&b.ObjectMeta, polykubev1alpha1.ReconcileRequestedAtAnnotation, "after-secret")
	})
	Eventually(func(g Gomega) string {
		b := &polykubev1alpha1.DatastoreBinding{}
		g.Expect(c.Get(ctx, key(ns, "orders-db"), b)).To(Succeed())
		return b.Status.LastHandledReconcileAt
	}).WithTimeout(timeout).WithPolling(poll).Should(Equal("after-secret"))
	b := &polykubev1alpha1.DatastoreBinding{}
	Expect(c.Get(ctx, key(ns, "orders-db"), b)).To(Succeed())
	bound := meta.FindStatusCondition(b.Status.Conditions, polykubev1alpha1.BoundCondition)
	Expect(bound.Reason).To(Equal(polykubev1alpha1.ReasonSecretNotFound), "a suspended binding's Bound condition stays as it was")

	update(func(b *polykubev1alpha1.DatastoreBinding) { b.Spec.Suspend = false })
	eventuallyBound(t, c, ns, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
}
