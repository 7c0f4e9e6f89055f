package placement

import (
	"sort"
	"time"
)

// FailoverTiming is the hysteresis of a Workload's failover.
type FailoverTiming struct {
	// DetectAfter is how long a peer's deficit must be seen before survivors absorb it; a
	// shorter blip moves nothing.
	DetectAfter time.Duration
	// ReturnAfter is how long a peer must be seen recovered (a smaller deficit, or none) before
	// survivors give the extra back. The peer's replicas are ready again before that, so the
	// return is make-before-break.
	ReturnAfter time.Duration
}

// PeerFailover is what the hysteresis remembers of one peer. The operator keeps it in the
// Workload's status, so it outlives a restart.
type PeerFailover struct {
	Cluster string
	// Absorbed is the deficit acted on, the value PlanFailover is given for this peer.
	Absorbed int32
	// ActiveSince is when Absorbed last rose from 0; zero while Absorbed is 0.
	ActiveSince time.Time
	// PendingSince is when the observed deficit started to differ from Absorbed; zero when it
	// does not. A rise waits DetectAfter, a fall ReturnAfter.
	PendingSince time.Time
	// PendingTo is where Absorbed moves when the wait is over: for a rise the smallest deficit
	// seen since PendingSince (only what stayed missing the whole time), for a fall the largest
	// (only what stayed back the whole time).
	PendingTo int32
}

// Pending reports whether a change of Absorbed is waiting.
func (p PeerFailover) Pending() bool { return !p.PendingSince.IsZero() }

// Rising reports whether the waiting change is a rise (a new or larger deficit).
func (p PeerFailover) Rising() bool { return p.Pending() && p.PendingTo > p.Absorbed }

// due is when the waiting change takes effect.
func (p PeerFailover) due(t FailoverTiming) time.Time {
	if p.Rising() {
		return p.PendingSince.Add(t.DetectAfter)
	}
	return p.PendingSince.Add(t.ReturnAfter)
}

// FailoverState is the hysteresis of every peer with an absorbed or pending deficit, sorted by
// cluster name. The zero value is a fleet with no failover.
type FailoverState struct {
	Peers []PeerFailover
}

// Deficits are the absorbed deficits, the input of PlanFailover.
func (s FailoverState) Deficits() Deficits {
	d := Deficits{}
	for _, p := range s.Peers {
		if p.Absorbed > 0 {
			d[p.Cluster] = p.Absorbed
		}
	}
	return d
}

// Active reports whether any peer's deficit is absorbed.
func (s FailoverState) Active() bool {
	for _, p := range s.Peers {
		if p.Absorbed > 0 {
			return true
		}
	}
	return false
}

// NextChange is the earliest time a waiting change takes effect, for the reconciler to requeue
// at; false when nothing waits.
func (s FailoverState) NextChange(t FailoverTiming) (time.Time, bool) {
	var next time.Time
	for _, p := range s.Peers {
		if !p.Pending() {
			continue
		}
		if due := p.due(t); next.IsZero() || due.Before(next) {
			next = due
		}
	}
	return next, !next.IsZero()
}

// StepFailover is the hysteresis: from the previous state, the time now and the deficits
// observed now (every peer target; a missing peer counts as no deficit), it returns the next
// state. A deficit becomes absorbed once it has been seen at every step for DetectAfter; an
// absorbed deficit shrinks or ends once the smaller value has been seen at every step for
// ReturnAfter. A step at which the observation equals the absorbed value cancels whatever was
// waiting, so a blip shorter than DetectAfter moves nothing. It is pure: time is passed in.
// A step with now before a waiting change's start (a clock set back) waits longer.
func StepFailover(prev FailoverState, now time.Time, observed Deficits, timing FailoverTiming) FailoverState {
	byCluster := make(map[string]PeerFailover, len(prev.Peers)+len(observed))
	for _, p := range prev.Peers {
		byCluster[p.Cluster] = p
	}
	for c, d := range observed {
		if _, ok := byCluster[c]; !ok && d > 0 {
			byCluster[c] = PeerFailover{Cluster: c}
		}
	}
	var next FailoverState
	for c, p := range byCluster {
		p = stepPeer(p, now, max(observed[c], 0), timing)
		if p.Absorbed > 0 || p.Pending() {
			next.Peers = append(next.Peers, p)
		}
	}
	sort.Slice(next.Peers, func(i, j int) bool { return next.Peers[i].Cluster < next.Peers[j].Cluster })
	return next
}

func stepPeer(p PeerFailover, now time.Time, seen int32, timing FailoverTiming) PeerFailover {
	switch {
	case seen == p.Absorbed:
		p.PendingSince, p.PendingTo = time.Time{}, 0
		return p
	case seen > p.Absorbed && p.Rising():
		p.PendingTo = min(p.PendingTo, seen)
	case seen < p.Absorbed && p.Pending() && !p.Rising():
		p.PendingTo = max(p.PendingTo, seen)
	default: // a new change, or the direction turned
		p.PendingSince, p.PendingTo = now, seen
	}
	if now.Before(p.due(timing)) {
		return p
	}
	if p.Absorbed == 0 {
		p.ActiveSince = now
	}
	p.Absorbed = p.PendingTo
	if p.Absorbed == 0 {
		p.ActiveSince = time.Time{}
	}
	p.PendingSince, p.PendingTo = time.Time{}, 0
	if seen != p.Absorbed {
		// What is seen now differs from what stayed the whole wait: it starts its own wait.
		p.PendingSince, p.PendingTo = now, seen
	}
	return p
}

// HoldFailover is the step taken without a view of the peers (no peer target's EndpointSlice
// is mirrored, or no ServiceEndpoint shows them): every absorbed deficit is kept as it is and
// every waiting change is dropped. A cluster that cannot see its peers cannot tell a peer that
// is down from a mesh that does not report it, so it neither absorbs anything new (all its
// peers would look down: every cluster would surge at once) nor gives back what it runs for a
// peer it last saw down. When the view returns, StepFailover starts every wait afresh.
func HoldFailover(prev FailoverState) FailoverState {
	var next FailoverState
	for _, p := range prev.Peers {
		if p.Absorbed > 0 {
			p.PendingSince, p.PendingTo = time.Time{}, 0
			next.Peers = append(next.Peers, p)
		}
	}
	return next
}
