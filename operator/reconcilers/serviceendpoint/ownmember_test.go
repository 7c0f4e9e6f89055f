package serviceendpoint

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/rectest"
)

// Issue 33, defect 1, the ServiceEndpoint's side: while this cluster's own ClusterMember is
// terminating, the Workload keeps running here although placement no longer selects this
// cluster. The Service stays (nothing here deletes it), and the status must say why, not that
// the Workload runs nowhere here.
func TestReconciler_OwnMemberTerminating_ServiceKeptAndSaid(t *testing.T) {
	g := NewWithT(t)
	scheme := rectest.Scheme()
	alpha, beta, wl := rectest.OwnMemberTerminating("shop", "checkout")
	se := serviceEndpoint("checkout")
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&polykubev1alpha1.ServiceEndpoint{}).
		WithObjects(alpha, beta, wl, se).WithIndex(&discoveryv1.EndpointSlice{}, LocalSliceIndex, LocalSliceService).Build()
	r := &Reconciler{Client: c, Scheme: scheme, ClusterName: "alpha"}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(se)})
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(se), &corev1.Service{})).To(Succeed(), "the Service is in place")
	got := &polykubev1alpha1.ServiceEndpoint{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(se), got)).To(Succeed())
	ready := meta.FindStatusCondition(got.Status.Conditions, polykubev1alpha1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil())
	g.Expect(ready.Reason).To(Equal(polykubev1alpha1.ReasonClusterMemberTerminating))
	g.Expect(ready.Message).To(ContainSubstring(`ClusterMember "alpha"`))
	g.Expect(ready.Message).To(ContainSubstring("Service shop/checkout is in place"))
}
