package placement

import "fmt"

// Capacity failover (decision 0006): when peers of a Workload run fewer ready replicas than
// their base share, the clusters without a deficit (the survivors) run extra replicas that add
// up to the summed deficit, each capped by maxSurge. The base allocation never changes; the
// extra is a pure function of (spec, deficits, maxSurge), so every operator that sees the same
// deficits computes the same split, and polykube-status can recompute it from what a cluster
// reports.

// MaxSurge caps the extra replicas one survivor runs for its peers: a number of replicas, or a
// percentage of the survivor's own base share rounded up (like a Deployment's maxSurge), so a
// cluster given twice the weight may also absorb twice as much. A survivor whose base share is
// 0 absorbs nothing whatever the cap: the spec does not want it to run this Workload.
type MaxSurge struct {
	Value   int32
	Percent bool
}

// SurgeReplicas caps every survivor at n extra replicas.
func SurgeReplicas(n int32) MaxSurge { return MaxSurge{Value: n} }

// SurgePercent caps every survivor at ceil(p% of its base share) extra replicas.
func SurgePercent(p int32) MaxSurge { return MaxSurge{Value: p, Percent: true} }

// DefaultMaxSurge is the cap when a Workload opts into failover without one: a survivor at
// most doubles, which covers the loss of any one of two or more equally weighted clusters.
var DefaultMaxSurge = SurgePercent(100)

func (m MaxSurge) String() string {
	if m.Percent {
		return fmt.Sprintf("%d%%", m.Value)
	}
	return fmt.Sprintf("%d", m.Value)
}

// capFor is the most extra replicas a survivor with base replicas may run.
func (m MaxSurge) capFor(base int32) int64 {
	if base <= 0 {
		return 0
	}
	if !m.Percent {
		return int64(m.Value)
	}
	return (int64(base)*int64(m.Value) + 99) / 100
}

// Deficits are the replicas each cluster is observed to be missing below its base share: the
// base share minus its ready endpoints, as counted from this cluster's view of the mesh
// (internal/meshview) and kept for detectAfter (FailoverState). Clusters that are not targets,
// and values <= 0, mean no deficit; a deficit above a cluster's base share counts as its base.
type Deficits map[string]int32

// FailoverShare is one target's replicas under failover.
type FailoverShare struct {
	Cluster string
	// Base is the cluster's share from Allocate, which failover never lowers.
	Base int32
	// Deficit is the part of Base the view says is missing (0 for a survivor).
	Deficit int32
	// Extra is what the cluster runs for its peers; always 0 for a cluster with a deficit.
	Extra int32
}

// Replicas is the cluster's effective replicas, base plus extra.
func (s FailoverShare) Replicas() int32 { return s.Base + s.Extra }

// FailoverPlan is the result of PlanFailover: every target's share from one view.
type FailoverPlan struct {
	// Shares has one entry per target, sorted by cluster name.
	Shares []FailoverShare
	// Deficit is the summed deficit; Absorbed is the summed extra, Deficit minus what the caps
	// left uncovered.
	Deficit  int64
	Absorbed int64
}

// For returns the share of cluster and whether it is a target.
func (p FailoverPlan) For(cluster string) (FailoverShare, bool) {
	for _, s := range p.Shares {
		if s.Cluster == cluster {
			return s, true
		}
	}
	return FailoverShare{}, false
}

// Active reports whether any cluster runs extra replicas.
func (p FailoverPlan) Active() bool { return p.Absorbed > 0 }

// Failover is one cluster's outcome: its effective replicas, its base share and the peers whose
// deficit it helps absorb (empty when it runs no extra).
type Failover struct {
	Cluster  string
	Base     int32
	Extra    int32
	Replicas int32
	// Absorbs are the peers with a deficit, sorted by name, when Extra > 0 (the plan's order). The extra is split
	// from the summed deficit, so it is not attributed to one peer.
	Absorbs []string
}

// PlanFailover splits the summed deficit over the targets without a deficit with the divisor
// method of Allocate, each survivor's weight being its base share (so Static and explicit
// replicas fail over like weights do) and each capped by maxSurge. With no deficit the plan is
// the allocation, every Extra 0. It returns an error wrapping ErrInvalid for a spec Allocate
// rejects or a negative maxSurge.
func PlanFailover(spec Spec, deficits Deficits, maxSurge MaxSurge) (FailoverPlan, error) {
	if maxSurge.Value < 0 {
		return FailoverPlan{}, fmt.Errorf("%w: maxSurge %s is negative", ErrInvalid, maxSurge)
	}
	alloc, err := Allocate(spec)
	if err != nil {
		return FailoverPlan{}, err
	}
	plan := FailoverPlan{Shares: make([]FailoverShare, len(alloc))}
	var survivors []party
	var index []int
	for i, s := range alloc {
		d := min(max(deficits[s.Cluster], 0), s.Replicas)
		plan.Shares[i] = FailoverShare{Cluster: s.Cluster, Base: s.Replicas, Deficit: d}
		plan.Deficit += int64(d)
		if d == 0 {
			survivors = append(survivors, party{cluster: s.Cluster, weight: int64(s.Replicas), cap: maxSurge.capFor(s.Replicas)})
			index = append(index, i)
		}
	}
	extra, absorbed := divide(spec.Key, survivors, plan.Deficit)
	for j, i := range index {
		plan.Shares[i].Extra = int32(extra[j])
	}
	plan.Absorbed = absorbed
	return plan, nil
}

// FailoverFor is cluster's outcome of PlanFailover. The cluster's own entry in deficits, if any,
// counts like a peer's: a cluster whose own replicas are not ready absorbs nothing.
func FailoverFor(spec Spec, cluster string, deficits Deficits, maxSurge MaxSurge) (Failover, error) {
	plan, err := PlanFailover(spec, deficits, maxSurge)
	if err != nil {
		return Failover{}, err
	}
	s, ok := plan.For(cluster)
	if !ok {
		return Failover{}, fmt.Errorf("%w: cluster %q is not a target", ErrInvalid, cluster)
	}
	out := Failover{Cluster: cluster, Base: s.Base, Extra: s.Extra, Replicas: s.Replicas()}
	if s.Extra > 0 {
		for _, p := range plan.Shares {
			if p.Deficit > 0 {
				out.Absorbs = append(out.Absorbs, p.Cluster)
			}
		}
	}
	return out, nil
}
