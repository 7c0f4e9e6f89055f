package placement

import (
	"sort"
	"time"
)

// DefaultHandoverTimeout bounds a handover when spec.distribution.failover.handoverTimeout is
// unset: long enough for a new cluster to pull images and start pods, short enough that a
// target which never comes up does not keep the fleet above its allocation for long.
const DefaultHandoverTimeout = 10 * time.Minute

// Handover is a cluster keeping its share from before the roster grew (decision 0011). The zero
// value is no handover.
type Handover struct {
	// Held is this cluster's share before the roster grew: what it keeps running.
	Held int32
	// Until is when the hold ends even if the new targets were never seen serving.
	Until time.Time
	// Waiting are the peer targets not yet seen serving their share, sorted.
	Waiting []string
}

// Active reports whether this cluster holds a previous share.
func (h Handover) Active() bool { return h.Held > 0 }

// HandoverView is what one step of the handover knows.
type HandoverView struct {
	// Self is this cluster.
	Self string
	// Before is the allocation this cluster last wrote in its status (nil or empty: none yet).
	Before map[string]int32
	// Now is the allocation computed now.
	Now Allocation
	// Seen is true when this cluster sees its peers' ready endpoints (the failover's view).
	Seen bool
	// Ready is each peer's ready endpoint count, as seen (meaningful when Seen).
	Ready map[string]int32
	// Timeout bounds the hold; 0 turns handovers off.
	Timeout time.Duration
}

// StepHandover is the make-before-break of roster growth. A hold starts when this cluster's
// share falls from what it last wrote because a target newly got replicas (its share rose from
// none): the cluster keeps its previous share. The hold lasts while some peer target is not
// seen serving its share (every one of them, not only the new: a peer already short is the
// failover's, and keeping capacity meanwhile errs on the side of serving), and at most until
// Until: without a view nothing is ever seen serving, so the timeout alone ends it. It also ends
// once the allocation gives this cluster at least the held share again. It is pure: time is
// passed in.
func StepHandover(prev Handover, now time.Time, v HandoverView) Handover {
	if v.Timeout <= 0 {
		return Handover{}
	}
	base, targeted := v.Now.For(v.Self)
	if !targeted {
		return Handover{}
	}
	next := prev
	if !prev.Active() {
		held, ok := v.Before[v.Self]
		if !ok || held <= base || !newTarget(v) {
			return Handover{}
		}
		next = Handover{Held: held, Until: now.Add(v.Timeout)}
	}
	if !now.Before(next.Until) || base >= next.Held {
		return Handover{}
	}
	next.Waiting = nil
	for _, s := range v.Now {
		if s.Cluster == v.Self || s.Replicas == 0 {
			continue
		}
		if !v.Seen || v.Ready[s.Cluster] < s.Replicas {
			next.Waiting = append(next.Waiting, s.Cluster)
		}
	}
	if len(next.Waiting) == 0 {
		return Handover{}
	}
	sort.Strings(next.Waiting)
	return next
}

// newTarget reports whether a peer got replicas now that had none in the allocation last written.
func newTarget(v HandoverView) bool {
	for _, s := range v.Now {
		if s.Cluster != v.Self && s.Replicas > 0 && v.Before[s.Cluster] == 0 {
			return true
		}
	}
	return false
}

// NextChange is when the hold ends at the latest, for the reconciler to requeue at.
func (h Handover) NextChange() (time.Time, bool) { return h.Until, h.Active() }
