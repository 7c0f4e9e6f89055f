package workload

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Issue 33, defect 9: a typo in an explicit clusterRef ("wset" for "west") was never reported:
// the allocation gave the typo its replicas, which ran nowhere, and every cluster said Ready.
func TestReconciler_ExplicitTargetTypo_Reported(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	wl := testWorkload()
	wl.Generation = 1
	wl.Spec.Distribution = polykubev1alpha1.Distribution{
		Strategy: polykubev1alpha1.StrategyStatic,
		Targets: []polykubev1alpha1.DistributionTarget{
			{ClusterRef: "east", Replicas: ptr.To[int32](1)}, {ClusterRef: "wset", Replicas: ptr.To[int32](2)},
		},
	}
	member := func(name string) *polykubev1alpha1.ClusterMember {
		return &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&polykubev1alpha1.Workload{}).
		WithObjects(wl, member("east"), member("west")).Build()
	r := &Reconciler{Client: c, Scheme: scheme, ClusterName: "east"}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wl)})
	g.Expect(err).NotTo(HaveOccurred())

	got := &polykubev1alpha1.Workload{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(wl), got)).To(Succeed())
	cond := meta.FindStatusCondition(got.Status.Conditions, polykubev1alpha1.TargetsKnownCondition)
	g.Expect(cond).NotTo(BeNil(), "the typo is reported in TargetsKnown")
	g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonUnknownTargets))
	g.Expect(cond.Message).To(ContainSubstring(`"wset"`))
	g.Expect(cond.Message).To(ContainSubstring("clusterRef"))
	g.Expect(cond.Message).NotTo(ContainSubstring(`"east"`))

	// The member a Workload names explicitly concerns it: when it appears, the report goes.
	names := func(reqs []reconcile.Request) []string {
		var out []string
		for _, q := range reqs {
			out = append(out, q.Name)
		}
		return out
	}
	g.Expect(names(r.workloadsAfterMemberChange(context.Background(), member("wset")))).To(ConsistOf("api"))
	g.Expect(names(r.workloadsAfterMemberChange(context.Background(), member("north")))).To(BeEmpty())
}
