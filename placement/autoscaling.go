package placement

import "fmt"

// Autoscaling bounds (decision 0008). An autoscaled Workload runs, in each targeted cluster, an
// HPA between that cluster's own minimum and maximum. Each cluster computes them alone, from
// the same spec, as it computes its allocation:
//
//   - MultiCloudWeighted: the fleet's totals autoscaling.minReplicas and maxReplicas are each
//     split over the targets by Allocate, the divisor method of the allocation. Allocate is
//     house-monotone (raising the total never lowers a target), so a target's share of the
//     minimum is never above its share of the maximum, the shares of each total add up to the
//     total, and every cluster computes the same bounds for every target.
//   - Static: each target's replicas is its minimum and its maxReplicas its maximum, as given.
//
// A target whose maximum is 0 runs no HPA and no replicas. An HPA cannot keep a Deployment at
// zero, so a target whose share of the minimum is 0 but whose maximum is not gets 1 as its
// HPA minimum (Bounds.Min); the fleet's floor is then above autoscaling.minReplicas by the
// number of such targets.

// Totals are the fleet's autoscaling bounds that MultiCloudWeighted splits by weight.
type Totals struct {
	Min, Max int32
}

// Bounds is one target's autoscaling range.
type Bounds struct {
	Cluster string
	// MinShare is the target's share of the total minimum (Static: its replicas).
	MinShare int32
	// Min is the target's HPA minReplicas: MinShare, raised to 1 when Max is above 0; 0 when
	// Max is 0. It is also what the target's Deployment is created with.
	Min int32
	// Max is the target's HPA maxReplicas: its share of the total maximum (Static: its
	// maxReplicas). 0: the target runs no HPA and no replicas.
	Max int32
}

// Autoscaled is true when the target runs an HPA (its maximum is above 0).
func (b Bounds) Autoscaled() bool { return b.Max > 0 }

// BoundsAllocation is the result of AllocateBounds: one Bounds per target, sorted by cluster.
type BoundsAllocation []Bounds

// For returns the bounds of cluster and whether it is a target at all.
func (a BoundsAllocation) For(cluster string) (Bounds, bool) {
	for _, b := range a {
		if b.Cluster == cluster {
			return b, true
		}
	}
	return Bounds{}, false
}

// Floors is the allocation of an autoscaled Workload: each target's HPA minimum, the replicas
// its Deployment is created with.
func (a BoundsAllocation) Floors() Allocation {
	if a == nil {
		return nil
	}
	out := make(Allocation, 0, len(a))
	for _, b := range a {
		out = append(out, Share{Cluster: b.Cluster, Replicas: b.Min})
	}
	return out
}

// AllocateBounds returns the autoscaling bounds of every target. totals is required with
// MultiCloudWeighted and must be nil with Static; spec.Total must be unset (autoscaling
// replaces distribution.replicas). Errors wrap ErrInvalid, for the specs the API server's
// validation rejects.
func AllocateBounds(spec Spec, totals *Totals) (BoundsAllocation, error) {
	if spec.Total != nil {
		return nil, fmt.Errorf("%w: spec.distribution.replicas must not be set with spec.autoscaling", ErrInvalid)
	}
	switch spec.Strategy {
	case Static:
		if totals != nil {
			return nil, fmt.Errorf("%w: spec.autoscaling.minReplicas and maxReplicas are only allowed with MultiCloudWeighted; with Static set replicas and maxReplicas on each target", ErrInvalid)
		}
		return staticBounds(spec)
	case MultiCloudWeighted:
		if totals == nil {
			return nil, fmt.Errorf("%w: spec.autoscaling.minReplicas and maxReplicas are required with MultiCloudWeighted", ErrInvalid)
		}
		return weightedBounds(spec, *totals)
	default:
		// Allocate names the strategies.
		_, err := Allocate(spec)
		return nil, err
	}
}

func staticBounds(spec Spec) (BoundsAllocation, error) {
	floors, err := Allocate(spec) // checks the targets and their replicas
	if err != nil {
		return nil, err
	}
	maxOf := make(map[string]int32, len(spec.Targets))
	for _, t := range spec.Targets {
		if t.MaxReplicas == nil {
			return nil, fmt.Errorf("%w: target %q needs maxReplicas with spec.autoscaling and strategy Static", ErrInvalid, t.Cluster)
		}
		if *t.MaxReplicas < *t.Replicas {
			return nil, fmt.Errorf("%w: target %q has replicas %d above maxReplicas %d", ErrInvalid, t.Cluster, *t.Replicas, *t.MaxReplicas)
		}
		maxOf[t.Cluster] = *t.MaxReplicas
	}
	out := make(BoundsAllocation, 0, len(floors))
	for _, s := range floors {
		out = append(out, bounds(s.Cluster, s.Replicas, maxOf[s.Cluster]))
	}
	return out, nil
}

func weightedBounds(spec Spec, totals Totals) (BoundsAllocation, error) {
	if totals.Min < 0 || totals.Max < 1 || totals.Min > totals.Max {
		return nil, fmt.Errorf("%w: spec.autoscaling needs 0 <= minReplicas <= maxReplicas and maxReplicas >= 1, not %d and %d", ErrInvalid, totals.Min, totals.Max)
	}
	for _, t := range spec.Targets {
		if t.Replicas != nil {
			return nil, fmt.Errorf("%w: target %q has replicas; with spec.autoscaling and MultiCloudWeighted every target needs a weight and no replicas", ErrInvalid, t.Cluster)
		}
		if t.MaxReplicas != nil {
			return nil, fmt.Errorf("%w: target %q has maxReplicas, which only Static uses; with MultiCloudWeighted autoscaling.maxReplicas is split by weight", ErrInvalid, t.Cluster)
		}
	}
	split := func(total int32) (Allocation, error) {
		s := spec
		s.Total = &total
		return Allocate(s)
	}
	mins, err := split(totals.Min)
	if err != nil {
		return nil, err
	}
	maxes, err := split(totals.Max)
	if err != nil {
		return nil, err
	}
	// Both are sorted by cluster and hold the same targets.
	out := make(BoundsAllocation, 0, len(mins))
	for i := range mins {
		out = append(out, bounds(mins[i].Cluster, mins[i].Replicas, maxes[i].Replicas))
	}
	return out, nil
}

func bounds(cluster string, minShare, maxShare int32) Bounds {
	b := Bounds{Cluster: cluster, MinShare: minShare, Min: minShare, Max: maxShare}
	if b.Max > 0 && b.Min < 1 {
		b.Min = 1
	}
	return b
}
