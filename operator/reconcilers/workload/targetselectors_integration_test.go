package workload_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/placement"
)

// setMemberRegion sets spec.region of the ClusterMember named cluster and restores it when the
// test ends (the ClusterMembers are shared by the tests of this package).
func setMemberRegion(t *testing.T, c client.Client, cluster, region string) {
	t.Helper()
	ctx := context.Background()
	m := &polykubev1alpha1.ClusterMember{}
	Expect(c.Get(ctx, types.NamespacedName{Name: cluster}, m)).To(Succeed())
	old := m.Spec.Region
	patched := m.DeepCopy()
	patched.Spec.Region = region
	Expect(c.Patch(ctx, patched, client.MergeFrom(m))).To(Succeed())
	t.Cleanup(func() {
		m := &polykubev1alpha1.ClusterMember{}
		if err := c.Get(ctx, types.NamespacedName{Name: cluster}, m); err != nil {
			t.Errorf("restore the region of ClusterMember %s: %v", cluster, err)
			return
		}
		restored := m.DeepCopy()
		restored.Spec.Region = old
		if err := c.Patch(ctx, restored, client.MergeFrom(m)); err != nil {
			t.Errorf("restore the region of ClusterMember %s: %v", cluster, err)
		}
	})
}

// euWorkload splits total replicas by equal weight over every ClusterMember in region eu.
func euWorkload(ns, name string, total int32) *polykubev1alpha1.Workload {
	w := workload(ns, name, nil)
	w.Spec.Distribution = polykubev1alpha1.Distribution{
		Strategy: polykubev1alpha1.StrategyMultiCloudWeighted,
		Replicas: ptr.To(total),
		TargetSelectors: []polykubev1alpha1.TargetSelector{{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{polykubev1alpha1.RegionLabel: "eu"}},
			Weight:        ptr.To[int32](1),
		}},
	}
	return w
}

// reportedAllocation is what a status in the layout of decision 0013 says of the allocation:
// this cluster's share, the digest and the count of targets.
type reportedAllocation struct {
	Local   int32
	Digest  string
	Targets int32
}

// statusTargets reads the allocation the Workload's status reports in cluster east.
func statusTargets(g Gomega, c client.Client, ns, name string) reportedAllocation {
	w := &polykubev1alpha1.Workload{}
	g.Expect(c.Get(context.Background(), key(ns, name), w)).To(Succeed())
	g.Expect(w.Status.Targets).To(BeEmpty(), "the full list of targets is no longer written")
	var out reportedAllocation
	if w.Status.Local != nil {
		out.Local = w.Status.Local.DesiredReplicas
	}
	if a := w.Status.Allocation; a != nil {
		out.Digest, out.Targets = a.Digest, a.Targets
	}
	return out
}

// allocationOf is what statusTargets reads in cluster east for the allocation shares.
func allocationOf(shares map[string]int32) reportedAllocation {
	var alloc placement.Allocation
	for c, r := range shares {
		alloc = append(alloc, placement.Share{Cluster: c, Replicas: r})
	}
	return reportedAllocation{Local: shares[east], Digest: placement.AllocationDigest(alloc), Targets: int32(len(shares))}
}

func TestReconciler_TargetSelectors_NewMemberJoinsByItsLabels(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "selectors")
	setMemberRegion(t, c, east, "eu")
	startOperator(t, east)

	Expect(c.Create(ctx, euWorkload(ns, "api", 4))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	Eventually(func(g Gomega) {
		g.Expect(statusTargets(g, c, ns, "api")).To(Equal(allocationOf(map[string]int32{east: 4})))
		g.Expect(*getDeployment(g, c, ns, "api").Spec.Replicas).To(Equal(int32(4)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	gen := func(g Gomega) int64 {
		w := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(ctx, key(ns, "api"), w)).To(Succeed())
		return w.Generation
	}
	before := gen(Default)

	// A new EU cluster joins the roster. Nobody edits the Workload.
	joiner := optest.ClusterMember("eu-joiner", 40)
	joiner.Spec.Region = "eu"
	Expect(c.Create(ctx, joiner)).To(Succeed())
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), joiner); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete ClusterMember eu-joiner: %v", err)
		}
	})
	Eventually(func(g Gomega) {
		g.Expect(statusTargets(g, c, ns, "api")).To(Equal(allocationOf(map[string]int32{east: 2, "eu-joiner": 2})))
		g.Expect(*getDeployment(g, c, ns, "api").Spec.Replicas).To(Equal(int32(2)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the new EU member gets its share")
	Expect(gen(Default)).To(Equal(before), "the Workload was not edited")

	// A member outside the region changes nothing.
	setMemberRegion(t, c, "west", "us")
	Consistently(func(g Gomega) {
		g.Expect(statusTargets(g, c, ns, "api")).To(Equal(allocationOf(map[string]int32{east: 2, "eu-joiner": 2})))
	}).WithTimeout(time.Second).WithPolling(poll).Should(Succeed())

	// It leaves again: east runs everything again.
	Expect(c.Delete(ctx, joiner)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(statusTargets(g, c, ns, "api")).To(Equal(allocationOf(map[string]int32{east: 4})))
		g.Expect(*getDeployment(g, c, ns, "api").Spec.Replicas).To(Equal(int32(4)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the departed member's share returns")
}

func TestReconciler_TargetSelectors_MatchingNothing_ChangesNothing(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "selectors-none")
	setMemberRegion(t, c, east, "eu")
	startOperator(t, east)

	Expect(c.Create(ctx, euWorkload(ns, "api", 3))).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(*getDeployment(g, c, ns, "api").Spec.Replicas).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// The roster loses its only EU cluster (east moves out of the region): no target is left.
	setMemberRegion(t, c, east, "us")
	cond := eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonNoTargets)
	Expect(cond.Message).To(ContainSubstring("no ClusterMember of the roster"))
	w := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, key(ns, "api"), w)).To(Succeed())
	alloc := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.AllocatedCondition)
	Expect(alloc).NotTo(BeNil())
	Expect(alloc.Reason).To(Equal(polykubev1alpha1.ReasonNoTargets))
	Consistently(func(g Gomega) {
		g.Expect(*getDeployment(g, c, ns, "api").Spec.Replicas).To(Equal(int32(3)))
	}).WithTimeout(time.Second).WithPolling(poll).Should(Succeed(), "nothing is deleted or scaled while no target is selected")
}
