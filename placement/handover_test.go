package placement

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func TestStepHandover(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	// eu had alpha and beta at 3 each; gamma joins: 2 each.
	before := map[string]int32{"alpha": 3, "beta": 3}
	grown := Allocation{{"alpha", 2}, {"beta", 2}, {"gamma", 2}}
	view := func(seen bool, ready map[string]int32) HandoverView {
		return HandoverView{Self: "alpha", Before: before, Now: grown, Seen: seen, Ready: ready, Timeout: 10 * time.Minute}
	}
	started := Handover{Held: 3, Until: t0.Add(10 * time.Minute), Waiting: []string{"gamma"}}

	cases := []struct {
		name string
		prev Handover
		now  time.Time
		v    HandoverView
		want Handover
	}{
		{"a new target not serving yet: the previous share is kept", Handover{}, t0,
			view(true, map[string]int32{"beta": 2}), started},
		{"without a view too, bounded by the timeout", Handover{}, t0,
			view(false, nil), Handover{Held: 3, Until: t0.Add(10 * time.Minute), Waiting: []string{"beta", "gamma"}}},
		{"the new target serves its share: the hold ends", started, t0.Add(time.Minute),
			view(true, map[string]int32{"beta": 2, "gamma": 2}), Handover{}},
		{"partly serving: still held, the deadline kept", started, t0.Add(time.Minute),
			view(true, map[string]int32{"beta": 2, "gamma": 1}), started},
		{"a peer already short keeps the hold too", started, t0.Add(time.Minute),
			view(true, map[string]int32{"beta": 1, "gamma": 2}), Handover{Held: 3, Until: started.Until, Waiting: []string{"beta"}}},
		{"the timeout ends it, seen or not", started, t0.Add(10 * time.Minute),
			view(false, nil), Handover{}},
		{"handovers off", Handover{}, t0,
			HandoverView{Self: "alpha", Before: before, Now: grown, Timeout: 0}, Handover{}},
		{"no status yet (a new Workload): nothing to hold", Handover{}, t0,
			HandoverView{Self: "alpha", Now: grown, Timeout: time.Minute}, Handover{}},
		{"a smaller total with no new target is no handover", Handover{}, t0,
			HandoverView{Self: "alpha", Before: before, Now: Allocation{{"alpha", 2}, {"beta", 2}}, Timeout: time.Minute}, Handover{}},
		{"a target that leaves gives the others more: no handover", Handover{}, t0,
			HandoverView{Self: "alpha", Before: map[string]int32{"alpha": 2, "beta": 2, "gamma": 2}, Now: Allocation{{"alpha", 3}, {"beta", 3}}, Timeout: time.Minute}, Handover{}},
		{"a weight rising from 0 is a new target", Handover{}, t0,
			HandoverView{Self: "alpha", Before: map[string]int32{"alpha": 3, "beta": 3, "gamma": 0}, Now: grown, Seen: true, Timeout: 10 * time.Minute},
			Handover{Held: 3, Until: t0.Add(10 * time.Minute), Waiting: []string{"beta", "gamma"}}},
		{"the allocation gives back at least the held share: the hold ends", started, t0.Add(time.Minute),
			HandoverView{Self: "alpha", Before: map[string]int32{"alpha": 2, "beta": 2, "gamma": 2}, Now: Allocation{{"alpha", 3}, {"beta", 3}}, Timeout: time.Minute}, Handover{}},
		{"this cluster no longer targeted: nothing held", started, t0.Add(time.Minute),
			HandoverView{Self: "alpha", Before: before, Now: Allocation{{"beta", 3}, {"gamma", 3}}, Timeout: time.Minute}, Handover{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := NewWithT(t)
			got := StepHandover(c.prev, c.now, c.v)
			g.Expect(got).To(Equal(c.want))
		})
	}
}

// Whatever the views, a hold never runs more than the share held, never outlives its
// deadline, and a fleet that never grows never holds.
func TestStepHandover_Bounds(t *testing.T) {
	g := NewWithT(t)
	t0 := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	before := map[string]int32{"alpha": 4, "beta": 4}
	now := Allocation{{"alpha", 3}, {"beta", 3}, {"gamma", 2}}
	h := Handover{}
	for i := range 40 {
		at := t0.Add(time.Duration(i) * 30 * time.Second)
		ready := map[string]int32{"beta": int32(i % 4), "gamma": int32(i % 3)}
		h = StepHandover(h, at, HandoverView{Self: "alpha", Before: before, Now: now, Seen: i%2 == 0, Ready: ready, Timeout: 5 * time.Minute})
		if h.Active() {
			g.Expect(h.Held).To(Equal(int32(4)))
			g.Expect(at.Before(h.Until)).To(BeTrue())
			g.Expect(h.Until).To(BeTemporally("<=", t0.Add(5*time.Minute+15*time.Minute)))
		}
		// The next step sees the allocation it wrote: no new target any more.
		before = map[string]int32{"alpha": 3, "beta": 3, "gamma": 2}
	}
	g.Expect(h.Active()).To(BeFalse())
	same := map[string]int32{"alpha": 3, "beta": 3, "gamma": 2}
	g.Expect(StepHandover(Handover{}, t0, HandoverView{Self: "alpha", Before: same, Now: now, Timeout: time.Hour}).Active()).To(BeFalse())
}

// The digest layout (decision 0013) keeps this cluster's share and how many targets had
// replicas, not every share: a handover starts from it where the full list started one, except
// when one peer gains replicas as another loses them in the same step.
func TestStepHandover_FromTheDigestLayout(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 5, 0, 0, 0, time.UTC)
	grown := Allocation{{"alpha", 2}, {"beta", 2}, {"gamma", 2}}
	digest := func(self int32, targeted bool, with int) *PreviousAllocation {
		return &PreviousAllocation{Self: self, Targeted: targeted, TargetsWithReplicas: with}
	}
	cases := []struct {
		name string
		prev *PreviousAllocation
		now  Allocation
		want Handover
	}{
		{"a new target (2 with replicas, now 3): the previous share is kept", digest(3, true, 2), grown,
			Handover{Held: 3, Until: t0.Add(10 * time.Minute), Waiting: []string{"beta", "gamma"}}},
		{"a weight rising from 0 (3 targets, 2 with replicas): a new target", digest(3, true, 2), grown,
			Handover{Held: 3, Until: t0.Add(10 * time.Minute), Waiting: []string{"beta", "gamma"}}},
		{"a smaller total, no new target: no handover", digest(3, true, 2), Allocation{{"alpha", 2}, {"beta", 2}}, Handover{}},
		{"a target that leaves: no handover", digest(2, true, 3), Allocation{{"alpha", 3}, {"beta", 3}}, Handover{}},
		{"this cluster was no target: nothing to hold", digest(0, false, 2), grown, Handover{}},
		{"one peer in, one out in the same step: not seen from the counts (no handover)", digest(3, true, 2),
			Allocation{{"alpha", 2}, {"gamma", 4}}, Handover{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := StepHandover(Handover{}, t0, HandoverView{Self: "alpha", BeforeDigest: c.prev, Now: c.now, Timeout: 10 * time.Minute})
			NewWithT(t).Expect(got).To(Equal(c.want))
		})
	}
	// The full list, when an operator of the previous release wrote one, wins over the digest.
	full := HandoverView{Self: "alpha", Before: map[string]int32{"alpha": 3, "beta": 3}, BeforeDigest: digest(0, false, 0), Now: grown, Timeout: 10 * time.Minute}
	NewWithT(t).Expect(StepHandover(Handover{}, t0, full).Active()).To(BeTrue())
}

func TestAllocationDigest(t *testing.T) {
	g := NewWithT(t)
	a := Allocation{{"alpha", 2}, {"beta", 3}}
	g.Expect(AllocationDigest(a)).To(HaveLen(16))
	g.Expect(AllocationDigest(Allocation{{"beta", 3}, {"alpha", 2}})).To(Equal(AllocationDigest(a)), "order-independent")
	g.Expect(AllocationDigest(Allocation{{"alpha", 2}, {"beta", 2}})).NotTo(Equal(AllocationDigest(a)), "a share differs")
	g.Expect(AllocationDigest(Allocation{{"alpha", 2}, {"beta", 3}, {"gamma", 0}})).NotTo(Equal(AllocationDigest(a)), "a target with 0 replicas is a target")
	g.Expect(AllocationDigest(Allocation{{"alph", 2}, {"abeta", 3}})).NotTo(Equal(AllocationDigest(a)), "names are delimited")
	g.Expect(AllocationDigest(nil)).To(Equal(AllocationDigest(Allocation{})))
	// Pinned: an operator and a polykube-status of different versions must compute the same
	// digest, so the encoding cannot change without a decision record (decision 0013).
	g.Expect(AllocationDigest(a)).To(Equal("1023397399cf418a"), "sha256 of \"alpha=2\\nbeta=3\\n\", 16 hex digits")
}
