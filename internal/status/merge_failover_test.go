package status

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// failoverSince is when the fixtures' survivors started absorbing.
var failoverSince = metav1.NewTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))

// failingOver is checkout: 9 replicas, 3 each on alpha, beta and gamma, with failover
// (detectAfter, returnAfter and maxSurge left to their defaults, maxSurge 100%).
func failingOver() polykubev1alpha1.Workload {
	w := weighted("shop", "checkout", 9, fleetClusters...)
	w.Spec.Distribution.Failover = &polykubev1alpha1.Failover{}
	return w
}

// sees is w as the operator of cluster writes it when its view of the mesh has absorbed the
// given deficits: status.failover from placement, and its own slice (base + extra) ready.
func sees(w polykubev1alpha1.Workload, cluster string, absorbed placement.Deficits) polykubev1alpha1.Workload {
	w = operated(w, cluster)
	var state placement.FailoverState
	for _, c := range sortedMapKeys(absorbed) {
		state.Peers = append(state.Peers, placement.PeerFailover{Cluster: c, Absorbed: absorbed[c], ActiveSince: failoverSince.Time})
	}
	cfg, _, err := placement.FailoverFromWorkload(&w)
	if err != nil {
		panic(err)
	}
	f, err := placement.FailoverFor(placement.SpecFromWorkload(&w), cluster, state.Deficits(), cfg.MaxSurge)
	if err != nil {
		panic(err)
	}
	w.Status.Failover = placement.FailoverStatusOf(state, f)
	w.Status.ReadyReplicas = f.Replicas
	return w
}

// failoverFleet is the healthy fleet with checkout in every cluster; gamma has lost its pods
// (0 ready, Progressing), and alpha and beta have seen it short of its 3 for detectAfter.
func failoverFleet() []Snapshot {
	snaps := healthyFleet()
	for i, c := range fleetClusters {
		w := sees(failingOver(), c, placement.Deficits{"gamma": 3})
		if c == "gamma" {
			w = sees(failingOver(), c, nil)
			w.Status.ReadyReplicas, w.Status.Phase = 0, polykubev1alpha1.PhaseProgressing
		}
		snaps[i].Workloads = append(snaps[i].Workloads, w)
	}
	return snaps
}

func notices(r Report) []string {
	var out []string
	for _, n := range r.Notices {
		out = append(out, n.Kind+":"+n.Object+":"+n.Clusters[0])
	}
	return out
}

func TestMerge_Failover_ActiveIsANoticeNotADisagreement(t *testing.T) {
	g := NewWithT(t)
	r := Merge(failoverFleet(), Query{Timeout: 5 * time.Second})

	g.Expect(kinds(r)).To(BeEmpty())
	g.Expect(notices(r)).To(Equal([]string{"FailoverActive:Workload shop/checkout:alpha", "FailoverActive:Workload shop/checkout:beta"}))
	g.Expect(r.Notices[0].Message).To(MatchRegexp(`^alpha runs [45] replicas, its base 3 plus [12] for gamma \(missing 3 since 2026-12-03T10:00:00Z\): the extra stays until`))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitNotReady), "gamma's own slice is not ready; the notices change nothing")

	row := workloadRow(r, "checkout")
	alpha, beta, gamma := row.Clusters[0].Failover, row.Clusters[1].Failover, row.Clusters[2].Failover
	g.Expect(alpha.Active && beta.Active).To(BeTrue())
	g.Expect(alpha.ExtraReplicas+beta.ExtraReplicas).To(BeEquivalentTo(3), "the survivors split gamma's 3")
	g.Expect(*alpha.ExpectedReplicas).To(Equal(alpha.EffectiveReplicas))
	g.Expect(alpha.Peers).To(Equal([]PeerView{{Cluster: "gamma", AbsorbedReplicas: 3, Since: &failoverSince}}))
	g.Expect(gamma.Active).To(BeFalse())
	g.Expect(*gamma.ExpectedReplicas).To(BeEquivalentTo(3))
	g.Expect(row.NotReady).To(Equal([]string{"gamma: 0/3 ready, phase Progressing"}))
}

func TestMerge_Failover_ViewsThatDifferAreNotADisagreement(t *testing.T) {
	g := NewWithT(t)
	s := failoverFleet()
	// beta still sees gamma serving: it runs its base, which is what its own view gives.
	*findWorkload(&s[1], "checkout") = sees(failingOver(), "beta", nil)
	r := Merge(s, Query{Timeout: 5 * time.Second})
	g.Expect(kinds(r)).To(BeEmpty())
	g.Expect(notices(r)).To(Equal([]string{"FailoverActive:Workload shop/checkout:alpha"}))
}

func TestMerge_Failover_EffectiveReplicasNotFromTheReportedView(t *testing.T) {
	g := NewWithT(t)
	s := failoverFleet()
	st := findWorkload(&s[1], "checkout").Status.Failover
	st.ExtraReplicas, st.EffectiveReplicas = 3, 6 // a cap of 100% of 3, but the split of 3 over two survivors is 2+1
	r := Merge(s, Query{Timeout: 5 * time.Second})

	g.Expect(kinds(r)).To(Equal([]string{"FailoverNotAsComputed:Workload shop/checkout:beta"}))
	g.Expect(r.Disagreements[0].Message).To(MatchRegexp(
		`^beta reports 6 replicas \(base 3 \+ extra 3\), but placement.FailoverFor over the deficits it reports \(gamma missing 3\) with maxSurge 100% gives [45] \(base 3 \+ extra [12]\): the operator in beta computes failover differently`))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitDisagreement))
	g.Expect(notices(r)).To(ContainElement("FailoverActive:Workload shop/checkout:beta"), "what it runs is still shown")
}

func TestMerge_Failover_CappedByMaxSurge(t *testing.T) {
	g := NewWithT(t)
	one := intstr.FromInt32(1)
	s := healthyFleet()
	for i, c := range fleetClusters {
		w := failingOver()
		w.Spec.Distribution.Failover.MaxSurge = &one
		s[i].Workloads = append(s[i].Workloads, sees(w, c, placement.Deficits{"gamma": 3}))
	}
	r := Merge(s, Query{Timeout: 5 * time.Second})
	g.Expect(kinds(r)).To(BeEmpty())
	row := workloadRow(r, "checkout")
	g.Expect(row.Clusters[0].Failover.EffectiveReplicas).To(BeEquivalentTo(4))
	g.Expect(row.Clusters[1].Failover.EffectiveReplicas).To(BeEquivalentTo(4))
}

func TestMerge_Failover_NotActive(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(w *polykubev1alpha1.Workload)
	}{
		{"only a pending deficit (a blip shorter than detectAfter moves nothing)", func(w *polykubev1alpha1.Workload) {
			*w = sees(failingOver(), w.Status.Cluster, nil)
			w.Status.Failover.Peers = []polykubev1alpha1.PeerFailoverStatus{{Cluster: "gamma", PendingSince: &failoverSince, PendingReplicas: 3}}
		}},
		{"maxSurge 0 keeps the status and runs the base", func(w *polykubev1alpha1.Workload) {
			zero := intstr.FromInt32(0)
			c := w.Status.Cluster
			nw := failingOver()
			nw.Spec.Distribution.Failover.MaxSurge = &zero
			*w = sees(nw, c, placement.Deficits{"gamma": 3})
			if c == "gamma" {
				// gamma stays short (0/3): the survivors' deficit is confirmed by its own report.
				*w = sees(nw, c, nil)
				w.Status.ReadyReplicas, w.Status.Phase = 0, polykubev1alpha1.PhaseProgressing
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			s := failoverFleet()
			for i := range s {
				tt.mutate(findWorkload(&s[i], "checkout"))
			}
			r := Merge(s, Query{Timeout: 5 * time.Second})
			g.Expect(kinds(r)).To(BeEmpty())
			g.Expect(r.Notices).To(BeEmpty())
			g.Expect(workloadRow(r, "checkout").Clusters[0].Failover.Active).To(BeFalse())
		})
	}
}

func TestMerge_Failover_InvalidMaxSurge(t *testing.T) {
	g := NewWithT(t)
	bad := intstr.FromString("half")
	s := failoverFleet()
	for i := range s {
		w := findWorkload(&s[i], "checkout")
		w.Spec.Distribution.Failover.MaxSurge = &bad
		w.Status.Failover = &polykubev1alpha1.FailoverStatus{BaseReplicas: 3, EffectiveReplicas: 3}
	}
	r := Merge(s, Query{Timeout: 5 * time.Second})
	g.Expect(kinds(r)).To(Equal([]string{"InvalidSpec:Workload shop/checkout:alpha", "InvalidSpec:Workload shop/checkout:beta", "InvalidSpec:Workload shop/checkout:gamma"}))
	g.Expect(r.Disagreements[0].Message).To(ContainSubstring(`the copy in alpha cannot fail over: spec.distribution.failover.maxSurge "half" is neither`))
}
