package plan

import (
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/status"
)

func TestPlan_AssumeDown(t *testing.T) {
	g := NewWithT(t)
	p, err := PlanScoped([]string{fleetDir}, Scope{AssumeDown: []string{"gamma", "alpha", "gamma"}}, LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.AssumeDown).To(Equal([]string{"alpha", "gamma"}))

	// checkout: 3 each; with alpha and gamma down beta absorbs at most 100% of its 3.
	checkout := plannedNamed(g, p, "checkout").Failover
	g.Expect(checkout).To(Equal(&PlannedFailover{Enabled: true, MaxSurge: "100%", Deficit: 6, Absorbed: 3, Uncovered: 3, Shares: []FailoverShare{
		{Cluster: "alpha", Base: 3, Down: true},
		{Cluster: "beta", Base: 3, Extra: 3, Replicas: 6},
		{Cluster: "gamma", Base: 3, Down: true},
	}}))
	// ledger: every target down; nobody is left to absorb.
	ledger := plannedNamed(g, p, "ledger").Failover
	g.Expect(ledger.Absorbed).To(BeZero())
	g.Expect(ledger.Uncovered).To(BeEquivalentTo(6))
	// reports has no failover: gamma's 1 is lost, beta keeps its 2.
	reports := plannedNamed(g, p, "reports").Failover
	g.Expect(reports).To(Equal(&PlannedFailover{Enabled: false, Deficit: 1, Uncovered: 1, Shares: []FailoverShare{
		{Cluster: "beta", Base: 2, Replicas: 2},
		{Cluster: "gamma", Base: 1, Down: true},
	}}))
	// The allocation itself is unchanged.
	g.Expect(plannedNamed(g, p, "checkout").Allocation).To(Equal([]status.Share{{Cluster: "alpha", Replicas: 3}, {Cluster: "beta", Replicas: 3}, {Cluster: "gamma", Replicas: 3}}))
}

func TestPlan_AssumeDown_ClusterRunsItsEffectiveReplicas(t *testing.T) {
	g := NewWithT(t)
	p, err := PlanScoped([]string{fleetDir}, Scope{Cluster: "beta", AssumeDown: []string{"gamma"}}, LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	checkout := plannedNamed(g, p, "checkout")
	share, ok := checkout.Failover.For("beta")
	g.Expect(ok).To(BeTrue())
	g.Expect(share.Extra).To(BeNumerically(">", 0))
	g.Expect(*checkout.Replicas).To(Equal(share.Replicas))
	g.Expect(checkout.Deployment.Replicas).To(Equal(share.Replicas))
	g.Expect(*checkout.Deployment.Object.Spec.Replicas).To(Equal(share.Replicas))

	// A Workload that does not target the cluster assumed down has no preview.
	dir := t.TempDir()
	writeFile(t, dir, "w.yaml", doc("solo", 2))
	p, err = PlanScoped([]string{dir, fleetDir}, Scope{AssumeDown: []string{"beta"}}, LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(plannedNamed(g, p, "solo").Failover).To(BeNil())
	g.Expect(plannedNamed(g, p, "ledger").Failover).To(BeNil())
}

func TestPlan_AssumeDown_UsageErrors(t *testing.T) {
	g := NewWithT(t)
	_, err := PlanScoped([]string{fleetDir}, Scope{AssumeDown: []string{"gama"}}, LoadOptions{})
	g.Expect(status.IsUsage(err)).To(BeTrue())
	g.Expect(err.Error()).To(Equal("--assume-down gama: no Workload read targets it and no ClusterMember read has that name; the clusters known are alpha, beta, gamma"))

	_, err = PlanScoped([]string{fleetDir}, Scope{Cluster: "gamma", AssumeDown: []string{"gamma"}}, LoadOptions{})
	g.Expect(status.IsUsage(err)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("--cluster gamma is also --assume-down"))
}
