package status

import (
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// euSelecting is a Workload that splits total replicas by equal weight over the ClusterMembers
// in region eu.
func euSelecting(ns, name string, total int32) polykubev1alpha1.Workload {
	w := weighted(ns, name, total)
	w.Spec.Distribution.TargetSelectors = []polykubev1alpha1.TargetSelector{{
		LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{polykubev1alpha1.RegionLabel: "eu"}},
		Weight:        ptr.To[int32](1),
	}}
	return w
}

// operatedIn is operated for a Workload whose targets the operator of cluster resolved over
// its roster.
func operatedIn(w polykubev1alpha1.Workload, cluster string, roster []polykubev1alpha1.ClusterMember) polykubev1alpha1.Workload {
	w = *w.DeepCopy()
	alloc, err := placement.ForWorkloadIn(&w, roster)
	if err != nil {
		panic(err)
	}
	return withStatus(w, cluster, alloc, "hash-eu")
}

// euFleet is the healthy fleet with alpha and beta in region eu in every roster, gamma in
// region eu in the rosters of the clusters named in gammaInEUFor only, and the Workload shop/eu
// (4 replicas over region eu) as each operator computes it from its own roster.
func euFleet(gammaInEUFor ...string) []Snapshot {
	snaps := healthyFleet()
	eu := euSelecting("shop", "eu", 4)
	for i := range snaps {
		for j := range snaps[i].ClusterMembers {
			m := &snaps[i].ClusterMembers[j]
			if m.Name != "gamma" || strings.Contains(strings.Join(gammaInEUFor, ","), fleetClusters[i]) {
				m.Spec.Region = "eu"
			}
		}
	}
	for i, c := range fleetClusters {
		snaps[i].Workloads = append(snaps[i].Workloads, operatedIn(eu, c, snaps[i].ClusterMembers))
	}
	return snaps
}

func workloadRow(r Report, name string) WorkloadRow {
	for _, w := range r.Workloads {
		if w.Name == name {
			return w
		}
	}
	panic("no workload row " + name)
}

func TestMerge_TargetSelectors_ResolvedFromTheRoster(t *testing.T) {
	g := NewWithT(t)
	r := Merge(euFleet(), Query{Timeout: 5 * time.Second})

	g.Expect(kinds(r)).To(BeEmpty())
	row := workloadRow(r, "eu")
	g.Expect(row.Ready).To(BeTrue())
	g.Expect(row.Expected).To(Equal([]Share{{"alpha", 2}, {"beta", 2}}))
	for i, c := range row.Clusters {
		g.Expect(c.ResolvedTargets).To(Equal([]string{"alpha", "beta"}), "cell %d", i)
	}
	g.Expect(row.Clusters[0].Targeted).To(BeTrue())
	g.Expect(row.Clusters[2].Targeted).To(BeFalse(), "gamma is not in region eu")
	// Workloads with explicit targets only do not list resolved targets.
	g.Expect(workloadRow(r, "web").Clusters[0].ResolvedTargets).To(BeNil())
}

func TestMerge_TargetSelectors_RosterMismatchNamesTheWorkload(t *testing.T) {
	g := NewWithT(t)
	// gamma's own copy of ClusterMember gamma says region eu; alpha's and beta's do not.
	r := Merge(euFleet("gamma"), Query{Timeout: 5 * time.Second})

	g.Expect(kinds(r)).To(ContainElements(
		"RosterMismatch:Workload shop/eu:alpha,beta,gamma",
		"MemberMismatch:ClusterMember gamma:alpha,beta,gamma",
	))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitDisagreement))
	var workloadFinding, memberFinding Disagreement
	for _, d := range r.Disagreements {
		switch {
		case d.Kind == DisagreeRoster && d.Object == "Workload shop/eu":
			workloadFinding = d
		case d.Kind == DisagreeMember:
			memberFinding = d
		}
	}
	g.Expect(workloadFinding.Message).To(ContainSubstring("alpha, beta resolve [alpha beta]; gamma resolve [alpha beta gamma]"))
	g.Expect(memberFinding.Message).To(HaveSuffix("; Workloads whose targets differ because of it: shop/eu"))
	for _, d := range r.Disagreements {
		g.Expect(d.Object).NotTo(Equal("Workload shop/billing-api"), "explicit targets do not depend on the roster: %v", d)
	}

	row := workloadRow(r, "eu")
	g.Expect(row.Clusters[2].ResolvedTargets).To(Equal([]string{"alpha", "beta", "gamma"}))
	g.Expect(row.Clusters[2].Targeted).To(BeTrue())
}

func TestMerge_TargetSelectors_FederationRosterMismatchNamesTheWorkload(t *testing.T) {
	g := NewWithT(t)
	snaps := euFleet("gamma")
	snaps[2].Federations[0].Spec.Members = []string{"alpha", "beta"}
	r := Merge(snaps, Query{Timeout: 5 * time.Second})
	var fed Disagreement
	for _, d := range r.Disagreements {
		if d.Object == "Federation fleet" {
			fed = d
		}
	}
	g.Expect(fed.Kind).To(Equal(DisagreeRoster))
	g.Expect(fed.Message).To(HaveSuffix("; Workloads whose targets differ because of it: shop/eu"))
}

func TestMerge_TargetSelectors_NothingSelectedIsNotAnInvalidSpec(t *testing.T) {
	g := NewWithT(t)
	snaps := healthyFleet() // every member is in region "local"
	for i, c := range fleetClusters {
		w := euSelecting("shop", "eu", 4)
		w.Status = polykubev1alpha1.WorkloadStatus{ObservedGeneration: 1, Cluster: c, SpecHash: "hash-eu"}
		snaps[i].Workloads = append(snaps[i].Workloads, w)
	}
	r := Merge(snaps, Query{Timeout: 5 * time.Second})
	g.Expect(kinds(r)).To(BeEmpty(), fmt.Sprint(r.Disagreements))
	row := workloadRow(r, "eu")
	g.Expect(row.Expected).To(BeEmpty())
	g.Expect(row.Clusters[0].ResolvedTargets).To(Equal([]string{}))
	g.Expect(row.Ready).To(BeFalse())
	g.Expect(row.NotReady).To(ContainElement(ContainSubstring("alpha: no ClusterMember of its roster matches")))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitNotReady))
}
