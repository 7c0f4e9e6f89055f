package serviceendpoint

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/rectest"
)

// Suspended, a ServiceEndpoint's Service keeps a hand edit, through a requested reconcile;
// resumed, the operator sets it back.
func TestReconciler_ServiceEndpoint_SuspendKeepsAHandEdit(t *testing.T) {
	c, _ := startReconcilers(t, localCluster)
	g := NewWithT(t)
	ns := namespace(t, c, "se-suspend")
	rectest.Create(t, c, newWorkload(ns, "api", map[string]int32{localCluster: 1}))
	rectest.Create(t, c, newServiceEndpoint(ns, "api", "api"))
	g.Eventually(func(g Gomega) {
		g.Expect(readyOf(g, getServiceEndpoint(g, c, ns, "api")).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())

	update := func(change func(*polykubev1alpha1.ServiceEndpoint)) {
		g.Eventually(func(g Gomega) {
			se := getServiceEndpoint(g, c, ns, "api")
			change(se)
			g.Expect(c.Update(context.Background(), se)).To(Succeed())
		}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	}
	update(func(se *polykubev1alpha1.ServiceEndpoint) { se.Spec.Suspend = true })
	g.Eventually(func(g Gomega) {
		se := getServiceEndpoint(g, c, ns, "api")
		ready := readyOf(g, se)
		g.Expect(ready.Status).To(Equal(metav1.ConditionUnknown))
		g.Expect(ready.Reason).To(Equal(polykubev1alpha1.ReasonSuspended))
		g.Expect(ready.ObservedGeneration).To(Equal(se.Generation))
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())

	svc := getService(g, c, ns, "api")
	edited := svc.DeepCopy()
	edited.Annotations["service.cilium.io/global"] = "false"
	g.Expect(c.Patch(context.Background(), edited, client.MergeFrom(svc))).To(Succeed())
	update(func(se *polykubev1alpha1.ServiceEndpoint) {
		metav1.SetMetaDataAnnotation(&se.ObjectMeta, polykubev1alpha1.ReconcileRequestedAtAnnotation, "now")
	})
	g.Eventually(func(g Gomega) string {
		return getServiceEndpoint(g, c, ns, "api").Status.LastHandledReconcileAt
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Equal("now"))
	g.Expect(getService(g, c, ns, "api").Annotations).To(HaveKeyWithValue("service.cilium.io/global", "false"), "a suspended ServiceEndpoint's Service keeps the hand edit")

	update(func(se *polykubev1alpha1.ServiceEndpoint) { se.Spec.Suspend = false })
	g.Eventually(func(g Gomega) {
		g.Expect(getService(g, c, ns, "api").Annotations).To(HaveKeyWithValue("service.cilium.io/global", "true"))
		g.Expect(readyOf(g, getServiceEndpoint(g, c, ns, "api")).Status).To(Equal(metav1.ConditionTrue))
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
}
