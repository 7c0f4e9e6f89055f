// Package placement computes how many replicas of a Workload each target cluster runs.
//
// It is one pure function of the Workload's distribution: no clock, no randomness, no cluster
// state. Every operator in a federation evaluates it over the same Git-delivered spec and so
// reaches the same answer without talking to its peers; polykube-status evaluates it again to
// detect clusters that disagree, and `polykube-status plan` previews it before a merge. It is
// the contract the operator, the CLI and the test bed share, so it is a top-level package that
// each of them imports, and it imports none of them.
//
// Static keeps each target's replicas as given. MultiCloudWeighted keeps explicit per-target
// replicas and splits the rest of the total over the remaining targets by weight with the
// Sainte-Laguë/Webster divisor method: seats are handed out one at a time to the target with the
// highest weight/(2·seats+1). Handing out seats one at a time makes the method house-monotone
// (raising the total never lowers a target), and ties are broken by a hash of
// (namespace/name, clusterRef) so that no cluster name is favoured across workloads and target
// order never matters.
//
// Capacity failover (failover.go, decision 0006) adds one input to the allocation: the
// deficits a cluster observes in its peers. PlanFailover splits their sum over the clusters
// without a deficit by the same divisor method, capped by maxSurge, and never lowers a base
// share; StepFailover is its hysteresis (detectAfter, returnAfter), pure as well, with the time
// passed in.
//
// autoscaling.go splits an autoscaled Workload's minimum and maximum the same way
// (AllocateBounds, decision 0008): each total by Allocate, so every cluster's minimum is at most
// its maximum.
//
// overrides.go renders a cluster's effective pod template from the spec's ordered overrides and
// that cluster's ClusterMember (EffectiveTemplate, TemplateHash; decision 0005), under the same
// rules: pure, deterministic, the same answer in every process that asks.
package placement

import (
	"cmp"
	"container/heap"
	"errors"
	"fmt"
	"hash/fnv"
	"slices"
	"sort"
	"strings"
)

// Strategies, mirrored from the API so that the allocation (this file) needs no Kubernetes
// type; workload.go is the one adapter from the API types (and holds SpecHash).
const (
	Static             = "Static"
	MultiCloudWeighted = "MultiCloudWeighted"
)

// Target is one cluster's entry in a distribution.
type Target struct {
	Cluster  string
	Replicas *int32 // explicit replicas; kept as given
	Weight   *int32 // relative share of the remaining total (MultiCloudWeighted)
	// MaxReplicas is the autoscaling maximum of a Static target (AllocateBounds); Allocate
	// ignores it.
	MaxReplicas *int32
}

// Spec is the input of Allocate.
type Spec struct {
	// Key identifies the workload ("namespace/name"); it seeds the tie-break.
	Key      string
	Strategy string
	Total    *int32
	Targets  []Target
}

// Share is one target's allocation.
type Share struct {
	Cluster  string
	Replicas int32
}

// Allocation is the result of Allocate: one Share per target, sorted by cluster name.
type Allocation []Share

// For returns the replicas allocated to cluster and whether it is a target at all.
func (a Allocation) For(cluster string) (int32, bool) {
	for _, s := range a {
		if s.Cluster == cluster {
			return s.Replicas, true
		}
	}
	return 0, false
}

// Total is the sum of all shares.
func (a Allocation) Total() int64 {
	var t int64
	for _, s := range a {
		t += int64(s.Replicas)
	}
	return t
}

// ErrInvalid is wrapped by every error Allocate returns for a spec it cannot allocate.
var ErrInvalid = errors.New("invalid distribution")

// Allocate returns the replicas of every target. It returns an error wrapping ErrInvalid when
// the spec is inconsistent (the API server's validation rejects the same specs; this check
// protects callers that read manifests from files).
func Allocate(spec Spec) (Allocation, error) {
	if len(spec.Targets) == 0 {
		return nil, fmt.Errorf("%w: distribution.targets is empty", ErrInvalid)
	}
	seen := make(map[string]bool, len(spec.Targets))
	for _, t := range spec.Targets {
		if t.Cluster == "" {
			return nil, fmt.Errorf("%w: a target has an empty clusterRef", ErrInvalid)
		}
		if seen[t.Cluster] {
			return nil, fmt.Errorf("%w: clusterRef %q appears more than once", ErrInvalid, t.Cluster)
		}
		seen[t.Cluster] = true
		if t.Replicas != nil && *t.Replicas < 0 {
			return nil, fmt.Errorf("%w: target %q has negative replicas", ErrInvalid, t.Cluster)
		}
		if t.Weight != nil && *t.Weight < 0 {
			return nil, fmt.Errorf("%w: target %q has a negative weight", ErrInvalid, t.Cluster)
		}
	}

	switch spec.Strategy {
	case Static:
		return allocateStatic(spec)
	case MultiCloudWeighted:
		return allocateWeighted(spec)
	default:
		return nil, fmt.Errorf("%w: unknown strategy %q (use Static or MultiCloudWeighted)", ErrInvalid, spec.Strategy)
	}
}

func allocateStatic(spec Spec) (Allocation, error) {
	if spec.Total != nil {
		return nil, fmt.Errorf("%w: distribution.replicas is only allowed with MultiCloudWeighted", ErrInvalid)
	}
	out := make(Allocation, 0, len(spec.Targets))
	for _, t := range spec.Targets {
		if t.Replicas == nil {
			return nil, fmt.Errorf("%w: target %q needs replicas with strategy Static", ErrInvalid, t.Cluster)
		}
		out = append(out, Share{Cluster: t.Cluster, Replicas: *t.Replicas})
	}
	return sorted(out), nil
}

func allocateWeighted(spec Spec) (Allocation, error) {
	out := make(Allocation, 0, len(spec.Targets))
	var explicit int64
	var weighted []Target
	for _, t := range spec.Targets {
		if t.Replicas != nil {
			explicit += int64(*t.Replicas)
			out = append(out, Share{Cluster: t.Cluster, Replicas: *t.Replicas})
			continue
		}
		if spec.Total == nil {
			return nil, fmt.Errorf("%w: target %q has no replicas and distribution.replicas (the total) is not set", ErrInvalid, t.Cluster)
		}
		if t.Weight == nil {
			return nil, fmt.Errorf("%w: target %q needs a weight or replicas", ErrInvalid, t.Cluster)
		}
		weighted = append(weighted, t)
	}
	if spec.Total == nil {
		return sorted(out), nil
	}
	if *spec.Total < 0 {
		return nil, fmt.Errorf("%w: distribution.replicas is negative", ErrInvalid)
	}
	remaining := int64(*spec.Total) - explicit
	if remaining < 0 {
		return nil, fmt.Errorf("%w: distribution.replicas (%d) is less than the targets' explicit replicas (%d)", ErrInvalid, *spec.Total, explicit)
	}
	seats, err := webster(spec.Key, weighted, remaining)
	if err != nil {
		return nil, err
	}
	for i, t := range weighted {
		out = append(out, Share{Cluster: t.Cluster, Replicas: int32(seats[i])})
	}
	return sorted(out), nil
}

// webster splits seats over the weighted targets of an allocation: the divisor method with no
// cap, and at least one positive weight when there is anything to split.
func webster(key string, targets []Target, seats int64) ([]int64, error) {
	parties := make([]party, len(targets))
	positive := false
	for i, t := range targets {
		parties[i] = party{cluster: t.Cluster, weight: int64(*t.Weight), cap: uncapped}
		positive = positive || *t.Weight > 0
	}
	if seats > 0 && !positive {
		return nil, fmt.Errorf("%w: %d replicas are left to split by weight, but every target without explicit replicas has weight 0", ErrInvalid, seats)
	}
	got, _ := divide(key, parties, seats)
	return got, nil
}

// uncapped is the cap of a party that may receive any number of seats.
const uncapped = -1

// party is one recipient of the divisor method: a cluster, its weight and the most seats it may
// receive (uncapped, or a limit >= 0).
type party struct {
	cluster string
	weight  int64
	cap     int64
}

// divide is the Sainte-Laguë/Webster divisor method shared by the allocation and the failover
// split: it hands out seats one at a time to the party with the highest weight/(2·s+1), ties
// broken by tieKey(key, cluster); a party that reaches its cap receives no more. Parties of
// weight 0 or cap 0 receive nothing. It returns the seats of each party (in the order given)
// and how many were handed out, which is less than seats only when every party is capped.
func divide(key string, parties []party, seats int64) ([]int64, int64) {
	got := make([]int64, len(parties))
	if seats <= 0 {
		return got, 0
	}
	if equalUncapped(parties) {
		return divideEqually(key, parties, seats, got), seats
	}
	return divideByHeap(key, parties, seats, got)
}

// divideByHeap is divide's method as it reads: one seat at a time to the party of the highest
// priority, from a heap.
func divideByHeap(key string, parties []party, seats int64, got []int64) ([]int64, int64) {
	h := &priorityHeap{}
	for i, p := range parties {
		if p.weight > 0 && p.cap != 0 {
			h.items = append(h.items, candidate{index: i, weight: p.weight, limit: p.cap, tie: tieKey(key, p.cluster), cluster: p.cluster})
		}
	}
	heap.Init(h)
	var handed int64
	for ; handed < seats && h.Len() > 0; handed++ {
		c := &h.items[0]
		got[c.index]++
		c.seats++
		if c.limit >= 0 && c.seats >= c.limit {
			heap.Remove(h, 0)
			continue
		}
		heap.Fix(h, 0)
	}
	return got, handed
}

// equalUncapped reports whether every party has the same positive weight and no cap: the
// common case of targets selected by one rule, which divideEqually splits without handing
// the seats out one at a time.
func equalUncapped(parties []party) bool {
	if len(parties) == 0 {
		return false
	}
	for _, p := range parties {
		if p.weight <= 0 || p.weight != parties[0].weight || p.cap != uncapped {
			return false
		}
	}
	return true
}

// divideEqually is what divide hands out to parties of equal weight and no cap, in O(n log n)
// for any number of seats, not O(seats · log n). With equal weights a party's priority
// weight/(2·s+1) falls with every seat it holds, so the heap hands out seats in rounds: every
// party one seat in the order of (tieKey, cluster), then the next round in the same order. So
// each party gets seats/n, and the first seats%n in that order one more
// (TestDivideEquallyMatchesTheHeap compares the two). Cluster names are unique (Allocate
// refuses a duplicate), so that order is total.
func divideEqually(key string, parties []party, seats int64, got []int64) []int64 {
	n := int64(len(parties))
	for i := range got {
		got[i] = seats / n
	}
	rest := seats % n
	if rest == 0 {
		return got
	}
	type ranked struct {
		tie     uint64
		cluster string
		index   int
	}
	order := make([]ranked, len(parties))
	for i, p := range parties {
		order[i] = ranked{tieKey(key, p.cluster), p.cluster, i}
	}
	slices.SortFunc(order, func(a, b ranked) int {
		if a.tie != b.tie {
			return cmp.Compare(a.tie, b.tie)
		}
		return strings.Compare(a.cluster, b.cluster)
	})
	for _, r := range order[:rest] {
		got[r.index]++
	}
	return got
}

// tieKey orders targets whose priorities are equal. Hashing the workload key with the cluster
// name spreads tie wins across clusters instead of always favouring the alphabetically first.
func tieKey(key, cluster string) uint64 {
	f := fnv.New64a()
	_, _ = f.Write([]byte(key))
	_, _ = f.Write([]byte{0})
	_, _ = f.Write([]byte(cluster))
	return f.Sum64()
}

type candidate struct {
	index   int
	weight  int64
	seats   int64
	limit   int64 // uncapped or the most seats it may receive
	tie     uint64
	cluster string
}

// priorityHeap is a max-heap on weight/(2·seats+1), compared exactly by cross-multiplication.
type priorityHeap struct{ items []candidate }

func (h *priorityHeap) Len() int { return len(h.items) }
func (h *priorityHeap) Less(i, j int) bool {
	a, b := h.items[i], h.items[j]
	l, r := a.weight*(2*b.seats+1), b.weight*(2*a.seats+1)
	if l != r {
		return l > r
	}
	if a.tie != b.tie {
		return a.tie < b.tie
	}
	return a.cluster < b.cluster
}
func (h *priorityHeap) Swap(i, j int) { h.items[i], h.items[j] = h.items[j], h.items[i] }
func (h *priorityHeap) Push(x any)    { h.items = append(h.items, x.(candidate)) }
func (h *priorityHeap) Pop() any {
	old := h.items
	x := old[len(old)-1]
	h.items = old[:len(old)-1]
	return x
}

func sorted(a Allocation) Allocation {
	sort.Slice(a, func(i, j int) bool { return a[i].Cluster < a[j].Cluster })
	return a
}
