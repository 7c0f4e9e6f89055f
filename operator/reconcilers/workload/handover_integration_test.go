package workload_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

// Issue 33, defect 5: a ClusterMember that newly matches a weighted selector took its share from
// every running cluster the moment it arrived, before a pod of it ran. With failover (the view of
// the peers), this cluster keeps its previous share until every peer target is seen serving its
// own, then gives it up; the new member's share is in the allocation from the start.
func TestReconciler_Handover_RosterGrowthIsMakeBeforeBreak(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "handover")
	setMemberRegion(t, c, east, "eu")
	setMemberRegion(t, c, "west", "eu")
	startOperator(t, east)

	w := euWorkload(ns, "api", 6)
	w.Spec.Distribution.Failover = &polykubev1alpha1.Failover{
		DetectAfter: &metav1.Duration{Duration: time.Hour}, ReturnAfter: &metav1.Duration{Duration: time.Hour},
	}
	Expect(c.Create(ctx, w)).To(Succeed())
	Expect(c.Create(ctx, &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: polykubev1alpha1.ServiceEndpointSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"},
			Ports:       []polykubev1alpha1.WorkloadPort{httpPort},
		},
	})).To(Succeed())
	mirror(t, c, ns, "api", "west", 3, 3)
	Eventually(func(g Gomega) {
		g.Expect(statusTargets(g, c, ns, "api")).To(Equal(allocationOf(map[string]int32{east: 3, "west": 3})))
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// A third EU cluster joins; none of its pods runs yet.
	joiner := optest.ClusterMember("eu-newcomer", 41)
	joiner.Spec.Region = "eu"
	Expect(c.Create(ctx, joiner)).To(Succeed())
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), joiner); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete ClusterMember eu-newcomer: %v", err)
		}
	})
	Eventually(func(g Gomega) {
		g.Expect(statusTargets(g, c, ns, "api")).To(Equal(allocationOf(map[string]int32{east: 2, "west": 2, "eu-newcomer": 2})))
		fs, _ := failoverStatus(g, c, ns, "api")
		g.Expect(fs).NotTo(BeNil())
		g.Expect(fs.Handover).NotTo(BeNil(), "the previous share is held")
		g.Expect(fs.Handover.HeldReplicas).To(Equal(int32(3)))
		g.Expect(fs.Handover.Waiting).To(Equal([]string{"eu-newcomer"}))
		g.Expect(fs.BaseReplicas).To(Equal(int32(2)))
		g.Expect(fs.EffectiveReplicas).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the allocation has the new member at once, the hold keeps 3 here")
	Consistently(func(g Gomega) {
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(3*time.Second).WithPolling(poll).Should(Succeed(), "east keeps its 3 while the new member serves nothing")
	Eventually(func(g Gomega) bool { return hasEvent(g, c, ns, "api", polykubev1alpha1.ReasonHandoverStarted) }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "event HandoverStarted")

	// The new member serves its 2: east gives its third replica up.
	mirror(t, c, ns, "api", "eu-newcomer", 2, 2)
	Eventually(func(g Gomega) {
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(2)))
		fs, _ := failoverStatus(g, c, ns, "api")
		g.Expect(fs.Handover).To(BeNil())
		g.Expect(fs.EffectiveReplicas).To(Equal(int32(2)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the hold ends once every peer target serves its share")
	Eventually(func(g Gomega) bool { return hasEvent(g, c, ns, "api", polykubev1alpha1.ReasonHandoverEnded) }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "event HandoverEnded")
}

// Without a view of the new member the hold is bounded by handoverTimeout.
func TestReconciler_Handover_EndsAtItsTimeout(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "handover-timeout")
	setMemberRegion(t, c, east, "eu")
	setMemberRegion(t, c, "west", "eu")
	startOperator(t, east)

	const bound = 4 * time.Second
	w := euWorkload(ns, "api", 6)
	w.Spec.Distribution.Failover = &polykubev1alpha1.Failover{HandoverTimeout: &metav1.Duration{Duration: bound}}
	Expect(c.Create(ctx, w)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	joiner := optest.ClusterMember("eu-late", 42)
	joiner.Spec.Region = "eu"
	Expect(c.Create(ctx, joiner)).To(Succeed())
	joined := time.Now()
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), joiner); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete ClusterMember eu-late: %v", err)
		}
	})
	Eventually(func(g Gomega) {
		fs, cond := failoverStatus(g, c, ns, "api")
		g.Expect(fs.Handover).NotTo(BeNil())
		g.Expect(cond.Message).To(ContainSubstring("keeps its previous share of 3"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(2)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the hold ends at handoverTimeout")
	if d := time.Since(joined); d < bound-time.Second {
		t.Errorf("the share was given up %s after the member joined, before handoverTimeout %s", d, bound)
	}
}
