package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// SpecHash is a stable hash of a Workload's spec: the JSON encoding (struct fields in
// declaration order, map keys sorted), SHA-256, the first 16 bytes hex-encoded. Every operator
// writes it to status.specHash and polykube-status compares the copies of a Workload across
// clusters with it, so it is part of the contract between them, like the allocation.
func SpecHash(spec polykubev1alpha1.WorkloadSpec) string {
	return hashJSON("spec hash", spec)
}

// hashJSON is the SHA-256 of v's JSON encoding, the first 16 bytes hex-encoded.
func hashJSON(what string, v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// API types always have a JSON encoding.
		panic(what + ": " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// SpecFromWorkload builds the placement input of a Workload from its explicit targets only; a
// Workload with distribution.targetSelectors needs the roster: use SpecFromWorkloadIn.
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

// ForWorkload allocates the replicas of a Workload over its explicit targets; it ignores
// distribution.targetSelectors (ForWorkloadIn resolves them over a roster).
func ForWorkload(w *polykubev1alpha1.Workload) (Allocation, error) {
	return Allocate(SpecFromWorkload(w))
}
