package workload

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The API server rejects every distribution placement cannot allocate (CEL rules on the CRD),
// so the InvalidSpec path is only reachable for objects that bypassed validation (an older
// CRD, a manifest read from a file). It is exercised here with a fake client; everything else
// is tested against a real API server in integration_test.go.
func TestReconciler_InvalidSpec_IsTerminal(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())

	wl := testWorkload()
	wl.Generation = 1
	wl.Spec.Distribution = polykubev1alpha1.Distribution{
		Strategy: polykubev1alpha1.StrategyStatic,
		Targets:  []polykubev1alpha1.DistributionTarget{{ClusterRef: "east"}, {ClusterRef: "west", Replicas: ptr.To[int32](1)}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&polykubev1alpha1.Workload{}).
		WithObjects(wl, &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: "east"}}).Build()
	r := &Reconciler{Client: c, Scheme: scheme, ClusterName: "east"}

	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wl)})
	g.Expect(errors.Is(err, reconcile.TerminalError(nil))).To(BeTrue(), "an invalid spec is not retried: %v", err)

	got := &polykubev1alpha1.Workload{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(wl), got)).To(Succeed())
	for _, typ := range []string{polykubev1alpha1.AllocatedCondition, polykubev1alpha1.ReadyCondition} {
		cond := meta.FindStatusCondition(got.Status.Conditions, typ)
		g.Expect(cond).NotTo(BeNil(), typ)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), typ)
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonInvalidSpec), typ)
		g.Expect(cond.Message).To(ContainSubstring(`target "east" needs replicas`))
	}
	g.Expect(got.Status.Targets).To(BeEmpty())
	g.Expect(got.Status.Local).To(BeNil())
	g.Expect(got.Status.Allocation).To(BeNil())
	deps := &appsv1.DeploymentList{}
	g.Expect(c.List(context.Background(), deps)).To(Succeed())
	g.Expect(deps.Items).To(BeEmpty())
}

func TestReconciler_MemberChange_EnqueuesWhatItConcerns(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())
	explicit := testWorkload()
	explicit.Name = "explicit"
	selecting := testWorkload()
	selecting.Name = "selecting"
	selecting.Spec.Distribution.TargetSelectors = []polykubev1alpha1.TargetSelector{{
		LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{polykubev1alpha1.RegionLabel: "eu"}},
		Weight:        ptr.To[int32](1),
	}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(explicit, selecting).Build()
	r := &Reconciler{Client: c, Scheme: scheme, ClusterName: "east"}
	names := func(reqs []reconcile.Request) []string {
		var out []string
		for _, q := range reqs {
			out = append(out, q.Name)
		}
		return out
	}
	own := &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: "east"}}
	other := &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: "eu-joiner"}}
	g.Expect(names(r.workloadsAfterMemberChange(context.Background(), own))).To(ConsistOf("explicit", "selecting"),
		"this cluster's own member concerns every Workload")
	g.Expect(names(r.workloadsAfterMemberChange(context.Background(), other))).To(ConsistOf("selecting"),
		"another member concerns only the Workloads that select from the roster")
}

func TestMemberAppearsChangesOrGoes(t *testing.T) {
	g := NewWithT(t)
	m := func(gen int64) *polykubev1alpha1.ClusterMember {
		return &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: "eu-joiner", Generation: gen}}
	}
	p := memberAppearsChangesOrGoes
	g.Expect(p.Create(event.CreateEvent{Object: m(1)})).To(BeTrue(), "a member joins")
	g.Expect(p.Create(event.CreateEvent{Object: m(1), IsInInitialList: true})).To(BeFalse(), "start-up reconciles everything anyway")
	g.Expect(p.Delete(event.DeleteEvent{Object: m(1)})).To(BeTrue(), "a member leaves")
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: m(1), ObjectNew: m(2)})).To(BeTrue(), "its labels, region, zone or provider change")
	g.Expect(p.Update(event.UpdateEvent{ObjectOld: m(2), ObjectNew: m(2)})).To(BeFalse(), "a status write is no news")
}
