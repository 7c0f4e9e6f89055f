package status

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// toDigestLayout rewrites a copy's status as an operator of decision 0013 writes it: its own
// entry and a digest of the allocation it listed, no list.
func toDigestLayout(w *polykubev1alpha1.Workload) {
	var alloc placement.Allocation
	st := &w.Status
	for i, t := range st.Targets {
		alloc = append(alloc, placement.Share{Cluster: t.Cluster, Replicas: t.DesiredReplicas})
		if t.Local {
			st.Local = &st.Targets[i]
		}
	}
	st.Allocation = &polykubev1alpha1.AllocationDigest{
		Digest: placement.AllocationDigest(alloc), Targets: int32(len(alloc)), TargetsWithReplicas: int32(alloc.TargetsWithReplicas()),
	}
	if st.Local != nil {
		local := *st.Local
		st.Local = &local
	}
	st.Targets = nil
}

// fleetInLayouts is the healthy fleet with the copies of the clusters named in digest written
// in the digest layout, the others in the previous release's full list.
func fleetInLayouts(digest ...string) []Snapshot {
	snaps := healthyFleet()
	for i := range snaps {
		for _, c := range digest {
			if fleetClusters[i] == c {
				for j := range snaps[i].Workloads {
					toDigestLayout(&snaps[i].Workloads[j])
				}
			}
		}
	}
	return snaps
}

// polykube-status reads both status layouts, and a fleet in the middle of the upgrade (some
// clusters on the previous release, writing every target, some on this one, writing a digest)
// shows no disagreement when they computed the same allocation.
func TestMerge_StatusLayouts_AgreeingFleetIsHealthy(t *testing.T) {
	for _, tc := range []struct {
		name   string
		digest []string
	}{
		{"every cluster on the previous release (full list)", nil},
		{"every cluster on this release (digest)", fleetClusters},
		{"mixed: alpha upgraded, beta and gamma not yet", []string{"alpha"}},
		{"mixed: only gamma (not targeted by web) still on the previous release", []string{"alpha", "beta"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			r := Merge(fleetInLayouts(tc.digest...), Query{Timeout: 5 * time.Second})
			g.Expect(kinds(r)).To(BeEmpty())
			g.Expect(r.Summary.ExitCode).To(Equal(ExitOK))
			billing := r.Workloads[0]
			g.Expect(billing.Ready).To(BeTrue())
			g.Expect(billing.DesiredTotal).To(BeEquivalentTo(6))
			want := placement.AllocationDigest(mustAlloc(weighted("shop", "billing-api", 6, fleetClusters...)))
			g.Expect(billing.Clusters).To(HaveEach(HaveField("AllocationDigest", want)), "both layouts give the same digest")
			g.Expect(billing.Clusters).To(HaveEach(HaveField("AllocationTargets", BeEquivalentTo(3))))
		})
	}
}

// A cluster whose digest is not the allocation its spec and roster give is flagged, in a fleet
// of digests and in a mixed one, as the full list's disagreement was.
func TestMerge_StatusLayouts_DisagreementIsFound(t *testing.T) {
	wrong := placement.AllocationDigest(placement.Allocation{{Cluster: "alpha", Replicas: 3}, {Cluster: "beta", Replicas: 2}, {Cluster: "gamma", Replicas: 1}})
	for _, tc := range []struct {
		name   string
		digest []string
		mutate func(s []Snapshot)
		want   []string
	}{
		{
			name:   "digest layout: beta's operator computes another allocation",
			digest: fleetClusters,
			mutate: func(s []Snapshot) { findWorkload(&s[1], "billing-api").Status.Allocation.Digest = wrong },
			want: []string{
				"AllocationMismatch:Workload shop/billing-api:alpha,beta,gamma",
				"AllocationNotAsComputed:Workload shop/billing-api:beta",
			},
		},
		{
			name:   "mixed: the upgraded beta computes another allocation than alpha's and gamma's lists",
			digest: []string{"beta"},
			mutate: func(s []Snapshot) { findWorkload(&s[1], "billing-api").Status.Allocation.Digest = wrong },
			want: []string{
				"AllocationMismatch:Workload shop/billing-api:alpha,beta,gamma",
				"AllocationNotAsComputed:Workload shop/billing-api:beta",
			},
		},
		{
			name:   "mixed: alpha, still on the previous release, lists another allocation",
			digest: []string{"beta", "gamma"},
			mutate: func(s []Snapshot) { findWorkload(&s[0], "billing-api").Status.Targets[0].DesiredReplicas = 3 },
			want: []string{
				"AllocationMismatch:Workload shop/billing-api:alpha,beta,gamma",
				"AllocationNotAsComputed:Workload shop/billing-api:alpha",
			},
		},
		{
			name:   "digest layout: a count of targets that is not the recomputation's",
			digest: fleetClusters,
			mutate: func(s []Snapshot) { findWorkload(&s[2], "billing-api").Status.Allocation.Targets = 4 },
			want:   []string{"AllocationNotAsComputed:Workload shop/billing-api:gamma"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			snaps := fleetInLayouts(tc.digest...)
			tc.mutate(snaps)
			r := Merge(snaps, Query{Timeout: 5 * time.Second})
			g.Expect(kinds(r)).To(Equal(tc.want))
			g.Expect(r.Summary.ExitCode).To(Equal(ExitDisagreement))
		})
	}
}
