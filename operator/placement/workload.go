package placement

import (
	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// SpecFromWorkload builds the placement input of a Workload.
func SpecFromWorkload(w *polykubev1alpha1.Workload) Spec {
	d := w.Spec.Distribution
	s := Spec{
		Key:      w.Namespace + "/" + w.Name,
		Strategy: d.Strategy,
		Total:    d.Replicas,
		Targets:  make([]Target, 0, len(d.Targets)),
	}
	for _, t := range d.Targets {
		s.Targets = append(s.Targets, Target{Cluster: t.ClusterRef, Replicas: t.Replicas, Weight: t.Weight})
	}
	return s
}

// ForWorkload allocates the replicas of a Workload over its targets.
func ForWorkload(w *polykubev1alpha1.Workload) (Allocation, error) {
	return Allocate(SpecFromWorkload(w))
}
