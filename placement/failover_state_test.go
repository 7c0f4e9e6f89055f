package placement

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"
)

var (
	t0     = time.Date(2026, 12, 10, 9, 0, 0, 0, time.UTC)
	timing = FailoverTiming{DetectAfter: time.Minute, ReturnAfter: 5 * time.Minute}
)

// observation is one step of a peer's observed deficit and the absorbed deficit expected after it.
type observation struct {
	at       time.Duration // since t0
	deficit  int32
	absorbed int32
}

func TestStepFailover_Sequences(t *testing.T) {
	tests := []struct {
		name  string
		steps []observation
	}{
		{"a peer down for detectAfter is absorbed", []observation{
			{0, 3, 0}, {30 * time.Second, 3, 0}, {time.Minute, 3, 3}, {2 * time.Minute, 3, 3},
		}},
		{"a blip shorter than detectAfter moves nothing", []observation{
			{0, 3, 0}, {50 * time.Second, 0, 0}, {70 * time.Second, 3, 0}, {2 * time.Minute, 0, 0}, {10 * time.Minute, 0, 0},
		}},
		{"return only after recovered for returnAfter", []observation{
			{0, 3, 0}, {time.Minute, 3, 3}, {10 * time.Minute, 0, 3}, {14 * time.Minute, 0, 3}, {15 * time.Minute, 0, 0},
		}},
		{"a relapse during the return restarts the wait", []observation{
			{0, 3, 0}, {time.Minute, 3, 3}, {10 * time.Minute, 0, 3}, {13 * time.Minute, 3, 3},
			{14 * time.Minute, 0, 3}, {18 * time.Minute, 0, 3}, {19 * time.Minute, 0, 0},
		}},
		{"a partial recovery gives back only what stayed back", []observation{
			{0, 3, 0}, {time.Minute, 3, 3}, {10 * time.Minute, 1, 3}, {12 * time.Minute, 2, 3},
			{15 * time.Minute, 1, 2}, {20 * time.Minute, 1, 1}, {21 * time.Minute, 0, 1}, {26 * time.Minute, 0, 0},
		}},
		{"a rise takes what stayed missing the whole detectAfter", []observation{
			{0, 3, 0}, {30 * time.Second, 1, 0}, {time.Minute, 3, 1}, {2 * time.Minute, 3, 3},
		}},
		{"a worse deficit while absorbed waits detectAfter too", []observation{
			{0, 1, 0}, {time.Minute, 1, 1}, {2 * time.Minute, 3, 1}, {150 * time.Second, 3, 1}, {3 * time.Minute, 3, 3},
		}},
		{"negative observations are no deficit", []observation{
			{0, -4, 0}, {10 * time.Minute, -4, 0},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s FailoverState
			for i, o := range tt.steps {
				s = StepFailover(s, t0.Add(o.at), Deficits{"alpha": o.deficit}, timing)
				if got := s.Deficits()["alpha"]; got != o.absorbed {
					t.Fatalf("step %d (%s, deficit %d): absorbed %d, want %d; state %+v", i, o.at, o.deficit, got, o.absorbed, s)
				}
				if s.Active() != (o.absorbed > 0) {
					t.Fatalf("step %d: Active() = %v", i, s.Active())
				}
			}
		})
	}
}

func TestStepFailover_ActiveSinceAndNextChange(t *testing.T) {
	var s FailoverState
	if _, ok := s.NextChange(timing); ok {
		t.Fatal("an empty state has a next change")
	}
	s = StepFailover(s, t0, Deficits{"alpha": 3, "beta": 0}, timing)
	if next, ok := s.NextChange(timing); !ok || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("next change %v %v, want %v", next, ok, t0.Add(time.Minute))
	}
	s = StepFailover(s, t0.Add(time.Minute), Deficits{"alpha": 3}, timing)
	if len(s.Peers) != 1 || !s.Peers[0].ActiveSince.Equal(t0.Add(time.Minute)) || s.Peers[0].Pending() {
		t.Fatalf("want alpha active since t0+1m, nothing pending: %+v", s)
	}
	s = StepFailover(s, t0.Add(3*time.Minute), Deficits{"alpha": 0}, timing)
	if next, ok := s.NextChange(timing); !ok || !next.Equal(t0.Add(8*time.Minute)) {
		t.Fatalf("return due %v %v, want %v", next, ok, t0.Add(8*time.Minute))
	}
	// A missing peer counts as no deficit: the return still waits.
	s = StepFailover(s, t0.Add(5*time.Minute), nil, timing)
	if !s.Active() {
		t.Fatal("returned before returnAfter")
	}
	s = StepFailover(s, t0.Add(8*time.Minute), nil, timing)
	if s.Active() || len(s.Peers) != 0 {
		t.Fatalf("want an empty state after the return, got %+v", s)
	}
}

func TestStepFailover_ZeroDelaysFollowTheView(t *testing.T) {
	var s FailoverState
	for i, d := range []int32{3, 1, 0, 2} {
		s = StepFailover(s, t0.Add(time.Duration(i)*time.Second), Deficits{"alpha": d}, FailoverTiming{})
		if got := s.Deficits()["alpha"]; got != d {
			t.Fatalf("step %d: absorbed %d, want %d", i, got, d)
		}
	}
}

// TestStepFailover_Properties runs random observation sequences of several peers and checks,
// against the recorded history, that every rise to v was seen (>= v) at every step of the
// detectAfter before it and every fall to v was seen (<= v) at every step of the returnAfter
// before it, and that the state is the same when replayed.
func TestStepFailover_Properties(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 17))
	peers := []string{"alpha", "beta", "gamma"}
	for iter := range 300 {
		tm := FailoverTiming{DetectAfter: time.Duration(r.IntN(5)) * 10 * time.Second, ReturnAfter: time.Duration(r.IntN(8)) * 10 * time.Second}
		type seen struct {
			at time.Time
			d  int32
		}
		history := map[string][]seen{}
		var s, replay FailoverState
		now := t0
		for step := range 80 {
			now = now.Add(time.Duration(1+r.IntN(20)) * time.Second)
			obs := Deficits{}
			for _, p := range peers {
				if r.IntN(6) != 0 {
					obs[p] = int32(r.IntN(4))
				}
			}
			before := s.Deficits()
			s = StepFailover(s, now, obs, tm)
			replay = StepFailover(replay, now, obs, tm)
			if fmt.Sprint(s) != fmt.Sprint(replay) {
				t.Fatalf("iter %d step %d: not deterministic", iter, step)
			}
			after := s.Deficits()
			for _, p := range peers {
				history[p] = append(history[p], seen{now, max(obs[p], 0)})
				was, is := before[p], after[p]
				if is == was {
					continue
				}
				window, rising := tm.ReturnAfter, is > was
				if rising {
					window = tm.DetectAfter
				}
				h := history[p]
				if h[0].at.After(now.Add(-window)) && window > 0 {
					t.Fatalf("iter %d step %d: %s changed %d -> %d before a full window of history", iter, step, p, was, is)
				}
				for _, o := range h {
					if o.at.Before(now.Add(-window)) {
						continue
					}
					if rising && o.d < is || !rising && o.d > is {
						t.Fatalf("iter %d step %d: %s moved %d -> %d at %s but saw %d at %s (window %s)", iter, step, p, was, is, now.Sub(t0), o.d, o.at.Sub(t0), window)
					}
				}
			}
		}
	}
}

// Without a view nothing new is absorbed and nothing absorbed is given back: waits are dropped.
func TestHoldFailover_KeepsTheAbsorbedAndDropsTheWaits(t *testing.T) {
	prev := FailoverState{Peers: []PeerFailover{
		{Cluster: "a", Absorbed: 3, ActiveSince: t0},
		{Cluster: "b", Absorbed: 2, ActiveSince: t0, PendingSince: t0.Add(time.Minute), PendingTo: 0},
		{Cluster: "c", PendingSince: t0, PendingTo: 4},
	}}
	next := HoldFailover(prev)
	want := []PeerFailover{{Cluster: "a", Absorbed: 3, ActiveSince: t0}, {Cluster: "b", Absorbed: 2, ActiveSince: t0}}
	if !reflect.DeepEqual(next.Peers, want) {
		t.Errorf("HoldFailover = %+v, want %+v", next.Peers, want)
	}
	if !reflect.DeepEqual(next.Deficits(), prev.Deficits()) {
		t.Errorf("the absorbed deficits moved: %v, were %v", next.Deficits(), prev.Deficits())
	}
	if due, waits := next.NextChange(timing); waits {
		t.Errorf("a change still waits, due %s", due)
	}
	if got := HoldFailover(FailoverState{}); len(got.Peers) != 0 {
		t.Errorf("HoldFailover of nothing = %+v", got)
	}
}
