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
