package serviceendpoint

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
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

// Issue 33, defect 1, the ServiceEndpoint's side: while this cluster's own ClusterMember is
// terminating, the Workload keeps running here although placement no longer selects this
// cluster. The Service stays (nothing here deletes it), and the status must say why, not that
// the Workload runs nowhere here.
func TestReconciler_OwnMemberTerminating_ServiceKeptAndSaid(t *testing.T) {
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
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "checkout"},
		Spec: polykubev1alpha1.WorkloadSpec{Distribution: polykubev1alpha1.Distribution{
			Strategy: polykubev1alpha1.StrategyStatic,
			TargetSelectors: []polykubev1alpha1.TargetSelector{{
				LabelSelector: metav1.LabelSelector{MatchLabels: eu}, Replicas: ptr.To[int32](2),
			}},
		}},
	}
	se := serviceEndpoint("checkout")
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&polykubev1alpha1.ServiceEndpoint{}).
		WithObjects(alpha, member("beta"), wl, se).Build()
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
