package datastorebinding

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Issue 33, defect 1, the binding's side: while this cluster's own ClusterMember is terminating,
// placement leaves it out of the targets that labels select, but the Workload keeps its
// Deployment (and the binding's env vars) here. The binding must say that, not NotTargeted with
// no env vars bound.
func TestReconciler_OwnMemberTerminating_NotNotTargeted(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())
	eu := map[string]string{"region": "eu"}
	member := func(name string) *polykubev1alpha1.ClusterMember {
		return &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: polykubev1alpha1.ClusterMemberSpec{Labels: eu}}
	}
	alpha := member("alpha")
	alpha.Finalizers = []string{"example.com/hold"}
	alpha.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)))
	wl := &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: polykubev1alpha1.WorkloadSpec{Distribution: polykubev1alpha1.Distribution{
			Strategy: polykubev1alpha1.StrategyStatic,
			TargetSelectors: []polykubev1alpha1.TargetSelector{{
				LabelSelector: metav1.LabelSelector{MatchLabels: eu}, Replicas: ptr.To[int32](2),
			}},
		}},
	}
	b := binding("DB_")
	b.Spec.WorkloadRef.Name = "api"
	b.Status.BoundEnv = []string{"DB_HOST", "DB_PASS", "DB_PASSWORD"}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&polykubev1alpha1.DatastoreBinding{}).
		WithObjects(alpha, member("beta"), wl, b).Build()
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
