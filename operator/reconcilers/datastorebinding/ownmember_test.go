package datastorebinding

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/rectest"
)

// Issue 33, defect 1, the binding's side: while this cluster's own ClusterMember is terminating,
// placement leaves it out of the targets that labels select, but the Workload keeps its
// Deployment (and the binding's env vars) here. The binding must say that, not NotTargeted with
// no env vars bound.
func TestReconciler_OwnMemberTerminating_NotNotTargeted(t *testing.T) {
	g := NewWithT(t)
	scheme := rectest.Scheme()
	alpha, beta, wl := rectest.OwnMemberTerminating("shop", "api")
	b := binding("DB_")
	b.Spec.WorkloadRef.Name = "api"
	b.Status.BoundEnv = []string{"DB_HOST", "DB_PASS", "DB_PASSWORD"}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&polykubev1alpha1.DatastoreBinding{}).
		WithObjects(alpha, beta, wl, b).Build()
	r := &Reconciler{Client: c, Scheme: scheme, ClusterName: "alpha"}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(b)})
	g.Expect(err).NotTo(HaveOccurred())

	got := &polykubev1alpha1.DatastoreBinding{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(b), got)).To(Succeed())
	bound := meta.FindStatusCondition(got.Status.Conditions, polykubev1alpha1.BoundCondition)
	g.Expect(bound).NotTo(BeNil())
	g.Expect(bound.Reason).To(Equal(polykubev1alpha1.ReasonClusterMemberTerminating))
	g.Expect(bound.Message).To(ContainSubstring(`ClusterMember "alpha"`))
	g.Expect(got.Status.BoundEnv).To(Equal(b.Status.BoundEnv), "what is wired stays wired, and the status keeps saying so")
}
