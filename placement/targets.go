package placement

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// ErrNoTargets is wrapped by the error ResolveTargets returns when the spec is valid but neither
// its explicit targets nor its targetSelectors name any cluster of the roster. Unlike ErrInvalid
// it depends on the roster, which may still be arriving: it is not a spec error, and a caller
// should change nothing it runs until a ClusterMember appears.
var ErrNoTargets = errors.New("no targets")

// ResolveTargets is the explicit target list of a distribution over a roster: the explicit
// targets as given, then, for every roster member they do not name, the first targetSelectors
// rule whose label selector matches MemberLabels(member), with that rule's replicas or weight.
// The result is sorted by cluster name, so it depends on the set of members only, not on the
// order roster lists them in; every cluster holding the same roster resolves the same targets.
// Members being deleted (deletionTimestamp set) are not part of the roster.
//
// It is pure. Errors that depend on the spec alone wrap ErrInvalid and are checked whether or
// not a rule matches anything (a selector that does not parse, a rule with both or neither of
// replicas and weight, a weight with Static), so every cluster reports the same error for the
// same spec. When nothing is targeted at all it returns an error wrapping ErrNoTargets.
func ResolveTargets(d polykubev1alpha1.Distribution, roster []polykubev1alpha1.ClusterMember) ([]Target, error) {
	if len(d.Targets) == 0 && len(d.TargetSelectors) == 0 {
		return nil, fmt.Errorf("%w: spec.distribution: set targets, targetSelectors or both", ErrInvalid)
	}
	selectors := make([]labels.Selector, len(d.TargetSelectors))
	for i := range d.TargetSelectors {
		r := &d.TargetSelectors[i]
		where := fmt.Sprintf("spec.distribution.targetSelectors[%d]", i)
		if len(r.LabelSelector.MatchLabels) == 0 && len(r.LabelSelector.MatchExpressions) == 0 {
			return nil, fmt.Errorf("%w: %s: labelSelector must not be empty: set matchLabels or matchExpressions", ErrInvalid, where)
		}
		sel, err := metav1.LabelSelectorAsSelector(&r.LabelSelector)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: labelSelector: %v", ErrInvalid, where, err)
		}
		selectors[i] = sel
		if (r.Replicas == nil) == (r.Weight == nil) {
			return nil, fmt.Errorf("%w: %s: set exactly one of replicas or weight", ErrInvalid, where)
		}
		if d.Strategy == Static && r.Replicas == nil {
			return nil, fmt.Errorf("%w: %s: strategy Static needs replicas (weight needs MultiCloudWeighted)", ErrInvalid, where)
		}
	}

	out := make([]Target, 0, len(d.Targets)+len(roster))
	named := make(map[string]bool, len(d.Targets))
	for _, t := range d.Targets {
		out = append(out, Target{Cluster: t.ClusterRef, Replicas: t.Replicas, Weight: t.Weight, MaxReplicas: t.MaxReplicas})
		named[t.ClusterRef] = true
	}
	if len(selectors) > 0 {
		seen := make(map[string]bool, len(roster))
		for i := range roster {
			m := &roster[i]
			if named[m.Name] || seen[m.Name] || m.Name == "" || !m.DeletionTimestamp.IsZero() {
				continue
			}
			// MemberLabels without building the set: this runs for every member on every
			// reconcile of every Workload that selects from the roster.
			set := memberLabels{m}
			for k, sel := range selectors {
				if sel.Matches(set) {
					r := &d.TargetSelectors[k]
					out = append(out, Target{Cluster: m.Name, Replicas: r.Replicas, Weight: r.Weight, MaxReplicas: r.MaxReplicas})
					seen[m.Name] = true
					break
				}
			}
		}
	}
	// A roster read in name order (the operator keeps its copy so) and no explicit target give
	// targets already in order: checked in O(C), not sorted again on every reconcile.
	byCluster := func(a, b Target) int { return strings.Compare(a.Cluster, b.Cluster) }
	if !slices.IsSortedFunc(out, byCluster) {
		slices.SortStableFunc(out, byCluster)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%w: no ClusterMember of the roster (%d) matches spec.distribution.targetSelectors and there are no explicit targets", ErrNoTargets, len(roster))
	}
	return out, nil
}

// memberLabels is MemberLabels(member) read in place, as a selector sees it: the same keys and
// values (TestMemberLabelsView compares them), without a map built per member.
type memberLabels struct {
	m *polykubev1alpha1.ClusterMember
}

var _ labels.Labels = memberLabels{}

func (l memberLabels) Lookup(key string) (string, bool) {
	switch key {
	case polykubev1alpha1.ClusterLabel:
		return l.m.Name, true
	case polykubev1alpha1.ProviderLabel:
		return l.m.Spec.Provider, true
	case polykubev1alpha1.RegionLabel:
		return l.m.Spec.Region, l.m.Spec.Region != ""
	case polykubev1alpha1.ZoneLabel:
		return l.m.Spec.Zone, l.m.Spec.Zone != ""
	}
	v, ok := l.m.Spec.Labels[key]
	return v, ok
}

func (l memberLabels) Has(key string) bool {
	_, ok := l.Lookup(key)
	return ok
}

func (l memberLabels) Get(key string) string {
	v, _ := l.Lookup(key)
	return v
}

// SpecFromWorkloadIn builds the placement input of a Workload with its targets resolved over
// roster (ResolveTargets).
func SpecFromWorkloadIn(w *polykubev1alpha1.Workload, roster []polykubev1alpha1.ClusterMember) (Spec, error) {
	d := w.Spec.Distribution
	targets, err := ResolveTargets(d, roster)
	if err != nil {
		return Spec{}, err
	}
	return Spec{Key: w.Namespace + "/" + w.Name, Strategy: d.Strategy, Total: d.Replicas, Targets: targets}, nil
}

// ForWorkloadIn allocates the replicas of a Workload over the targets it resolves in roster.
// For an autoscaled Workload the allocation is each target's HPA minimum, the replicas its
// Deployment starts with (BoundsAllocation.Floors).
func ForWorkloadIn(w *polykubev1alpha1.Workload, roster []polykubev1alpha1.ClusterMember) (Allocation, error) {
	spec, err := SpecFromWorkloadIn(w, roster)
	if err != nil {
		return nil, err
	}
	return allocationOf(w, spec)
}

// ForWorkloadSpec is ForWorkloadIn for a spec SpecFromWorkloadIn already resolved: a caller
// that needs the targets, the allocation and the bounds resolves the roster once.
func ForWorkloadSpec(w *polykubev1alpha1.Workload, spec Spec) (Allocation, error) {
	return allocationOf(w, spec)
}

// BoundsForWorkloadSpec is BoundsForWorkloadIn for a spec SpecFromWorkloadIn already resolved.
func BoundsForWorkloadSpec(w *polykubev1alpha1.Workload, spec Spec) (b BoundsAllocation, ok bool, err error) {
	if w.Spec.Autoscaling == nil {
		return nil, false, nil
	}
	b, err = boundsOf(w, spec)
	return b, true, err
}

// BoundsForWorkloadIn returns the autoscaling bounds of every target a Workload resolves in
// roster; ok is false when spec.autoscaling is unset.
func BoundsForWorkloadIn(w *polykubev1alpha1.Workload, roster []polykubev1alpha1.ClusterMember) (b BoundsAllocation, ok bool, err error) {
	if w.Spec.Autoscaling == nil {
		return nil, false, nil
	}
	spec, err := SpecFromWorkloadIn(w, roster)
	if err != nil {
		return nil, true, err
	}
	b, err = boundsOf(w, spec)
	return b, true, err
}

// UsesRoster reports whether a Workload's targets depend on the roster (it has targetSelectors).
func UsesRoster(w *polykubev1alpha1.Workload) bool {
	return len(w.Spec.Distribution.TargetSelectors) > 0
}
