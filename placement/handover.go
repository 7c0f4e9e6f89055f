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
	// Before is the allocation this cluster last wrote in its status as a full list of targets,
	// as operators before decision 0013 wrote it (nil or empty: none, or the digest layout).
	Before map[string]int32
	// BeforeDigest is what the status of the digest layout (decision 0013) keeps of the
	// allocation last written, used when Before is empty.
	BeforeDigest *PreviousAllocation
	// Now is the allocation computed now.
	Now Allocation
	// Seen is true when this cluster sees its peers' ready endpoints (the failover's view).
	Seen bool
	// Ready is each peer's ready endpoint count, as seen (meaningful when Seen).
	Ready map[string]int32
	// Timeout bounds the hold; 0 turns handovers off.
	Timeout time.Duration
}

// PreviousAllocation is what a status in the digest layout (decision 0013) keeps of the
// allocation it was written with: this cluster's own share and how many targets had replicas.
type PreviousAllocation struct {
	// Self is this cluster's share then; Targeted is false when it was no target.
	Self     int32
	Targeted bool
	// TargetsWithReplicas is how many targets (this cluster included) had replicas above 0.
	TargetsWithReplicas int
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
		held, ok, grew := previousShare(v, base)
		if !ok || held <= base || !grew {
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

// previousShare is this cluster's share in the allocation last written (ok false: none), and
// whether a peer target got replicas since. From a full list (Before) that is exact: some peer
// has replicas now that had none. From the digest layout it is counted: more peers have
// replicas now than had then. The count misses one case the list sees, a change that gives one
// peer replicas while taking them from another in the same step (no hold then: the share is
// given up at once, as without failover); it never sees a new target the list would not.
func previousShare(v HandoverView, base int32) (held int32, ok, grew bool) {
	if len(v.Before) > 0 || v.BeforeDigest == nil {
		held, ok = v.Before[v.Self]
		return held, ok, ok && newTarget(v)
	}
	d := v.BeforeDigest
	if !d.Targeted {
		return 0, false, false
	}
	peersBefore := d.TargetsWithReplicas
	if d.Self > 0 {
		peersBefore--
	}
	peersNow := v.Now.TargetsWithReplicas()
	if base > 0 {
		peersNow--
	}
	return d.Self, true, peersNow > peersBefore
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
