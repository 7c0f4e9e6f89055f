package status

import (
	"testing"

	. "github.com/onsi/gomega"
)

// upgradingFleet: the healthy fleet halfway through an upgrade: gamma's operator already runs
// v0.2.0, alpha's and beta's still v0.1.0.
func upgradingFleet() []Snapshot {
	s := healthyFleet()
	setOperatorVersion(&s[2], "v0.2.0")
	return s
}

// setOperatorVersion sets status.operatorVersion of the snapshot's local ClusterMember.
func setOperatorVersion(s *Snapshot, v string) {
	for i := range s.ClusterMembers {
		if s.ClusterMembers[i].Status.Local {
			s.ClusterMembers[i].Status.OperatorVersion = v
		}
	}
}

func TestMerge_Versions_EachClusterRowShowsItsOperatorVersion(t *testing.T) {
	g := NewWithT(t)
	r := Merge(upgradingFleet(), Query{Namespace: "shop"})
	var got []string
	for _, cl := range r.Clusters {
		got = append(got, cl.Cluster+"="+cl.OperatorVersion)
	}
	g.Expect(got).To(Equal([]string{"alpha=v0.1.0", "beta=v0.1.0", "gamma=v0.2.0"}))
}

func TestMerge_Versions_SkewIsANoticeNotAFailure(t *testing.T) {
	g := NewWithT(t)
	r := Merge(upgradingFleet(), Query{Namespace: "shop"})
	g.Expect(r.Notices).To(HaveLen(1))
	n := r.Notices[0]
	g.Expect(n.Kind).To(Equal(NoticeVersionSkew))
	g.Expect(n.Level).To(BeEmpty(), "one minor apart is what the skew policy allows")
	g.Expect(n.Clusters).To(Equal([]string{"alpha", "beta", "gamma"}))
	g.Expect(n.Message).To(ContainSubstring("v0.1.0 (alpha, beta)"))
	g.Expect(n.Message).To(ContainSubstring("v0.2.0 (gamma)"))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitOK))
	g.Expect(r.Summary.Healthy).To(BeTrue())
}

func TestMerge_Versions_NoNoticeWhenEveryClusterRunsOneVersion(t *testing.T) {
	g := NewWithT(t)
	r := Merge(healthyFleet(), Query{Namespace: "shop"})
	g.Expect(r.Notices).To(BeEmpty())
}

func TestMerge_Versions_UnreachableClustersDoNotCount(t *testing.T) {
	g := NewWithT(t)
	s := upgradingFleet()
	s[2] = unreachable(s[2], ReasonUnreachable)
	r := Merge(s, Query{Namespace: "shop"})
	g.Expect(r.Notices).To(BeEmpty())
	g.Expect(r.Clusters[2].OperatorVersion).To(BeEmpty())
}

func TestMerge_Versions_SkewBeyondThePolicyIsAWarning(t *testing.T) {
	g := NewWithT(t)
	s := upgradingFleet()
	setOperatorVersion(&s[0], "v0.0.9")
	r := Merge(s, Query{Namespace: "shop"})
	g.Expect(r.Notices).To(HaveLen(1))
	g.Expect(r.Notices[0].Level).To(Equal(LevelWarning))
	g.Expect(r.Notices[0].Message).To(ContainSubstring("more than one minor release apart"))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitOK))
}

func TestMerge_Versions_AClusterThatReportsNoVersionIsNamed(t *testing.T) {
	g := NewWithT(t)
	s := upgradingFleet()
	setOperatorVersion(&s[1], "")
	r := Merge(s, Query{Namespace: "shop"})
	g.Expect(r.Notices).To(HaveLen(1))
	g.Expect(r.Notices[0].Message).To(ContainSubstring("no version reported (beta)"))
}
