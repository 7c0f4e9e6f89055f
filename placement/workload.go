package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// SpecHash is a stable hash of a Workload's spec: the JSON encoding (struct fields in
// declaration order, map keys sorted), SHA-256, the first 16 bytes hex-encoded. Every operator
// writes it to status.specHash and polykube-status compares the copies of a Workload across
// clusters with it, so it is part of the contract between them, like the allocation.
// spec.suspend is left out: pausing one cluster's operator changes no decision, and a hash that
// moved with it would make the paused cluster look as if it ran another spec.
func SpecHash(spec polykubev1alpha1.WorkloadSpec) string {
	spec.Suspend = false
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
		s.Targets = append(s.Targets, Target{Cluster: t.ClusterRef, Replicas: t.Replicas, Weight: t.Weight, MaxReplicas: t.MaxReplicas})
	}
	return s
}

// ForWorkload allocates the replicas of a Workload over its explicit targets; it ignores
// distribution.targetSelectors (ForWorkloadIn resolves them over a roster).
func ForWorkload(w *polykubev1alpha1.Workload) (Allocation, error) {
	return allocationOf(w, SpecFromWorkload(w))
}

// allocationOf allocates spec, the targets of w: by Allocate, or for an autoscaled Workload as
// the floors of its bounds.
func allocationOf(w *polykubev1alpha1.Workload, spec Spec) (Allocation, error) {
	if w.Spec.Autoscaling == nil {
		return Allocate(spec)
	}
	b, err := boundsOf(w, spec)
	if err != nil {
		return nil, err
	}
	return b.Floors(), nil
}

// boundsOf is AllocateBounds of an autoscaled Workload's targets (spec).
func boundsOf(w *polykubev1alpha1.Workload, spec Spec) (BoundsAllocation, error) {
	a := w.Spec.Autoscaling
	if w.Spec.Distribution.Failover != nil {
		return nil, fmt.Errorf("%w: spec.autoscaling cannot be combined with spec.distribution.failover", ErrInvalid)
	}
	var totals *Totals
	if a.MinReplicas != nil || a.MaxReplicas != nil {
		if a.MinReplicas == nil || a.MaxReplicas == nil {
			return nil, fmt.Errorf("%w: spec.autoscaling: set both minReplicas and maxReplicas, or neither (Static)", ErrInvalid)
		}
		totals = &Totals{Min: *a.MinReplicas, Max: *a.MaxReplicas}
	}
	return AllocateBounds(spec, totals)
}

// Failover defaults, applied when spec.distribution.failover leaves a field unset (the API
// server sets the same defaults; these cover objects that did not pass through it).
const (
	DefaultDetectAfter = 2 * time.Minute
	DefaultReturnAfter = 10 * time.Minute
)

// FailoverConfig is a Workload's spec.distribution.failover with the defaults applied.
type FailoverConfig struct {
	Timing   FailoverTiming
	MaxSurge MaxSurge
	// HandoverTimeout bounds a hold of the previous share when the roster grows; 0: no hold.
	HandoverTimeout time.Duration
}

// FailoverFromWorkload returns the failover settings of a Workload; ok is false when the
// Workload does not opt in. An invalid maxSurge (which the API's validation rejects) is an error.
func FailoverFromWorkload(w *polykubev1alpha1.Workload) (cfg FailoverConfig, ok bool, err error) {
	f := w.Spec.Distribution.Failover
	if f == nil {
		return FailoverConfig{}, false, nil
	}
	cfg = FailoverConfig{
		Timing:          FailoverTiming{DetectAfter: DefaultDetectAfter, ReturnAfter: DefaultReturnAfter},
		MaxSurge:        DefaultMaxSurge,
		HandoverTimeout: DefaultHandoverTimeout,
	}
	if f.HandoverTimeout != nil {
		if f.HandoverTimeout.Duration < 0 {
			return FailoverConfig{}, true, fmt.Errorf("spec.distribution.failover.handoverTimeout (%s) must not be negative", f.HandoverTimeout.Duration)
		}
		cfg.HandoverTimeout = f.HandoverTimeout.Duration
	}
	if f.DetectAfter != nil {
		cfg.Timing.DetectAfter = f.DetectAfter.Duration
	}
	if f.ReturnAfter != nil {
		cfg.Timing.ReturnAfter = f.ReturnAfter.Duration
	}
	if cfg.Timing.DetectAfter <= 0 || cfg.Timing.ReturnAfter <= 0 {
		return FailoverConfig{}, true, fmt.Errorf("spec.distribution.failover: detectAfter (%s) and returnAfter (%s) must be positive",
			cfg.Timing.DetectAfter, cfg.Timing.ReturnAfter)
	}
	if f.MaxSurge != nil {
		if cfg.MaxSurge, err = MaxSurgeOf(*f.MaxSurge); err != nil {
			return FailoverConfig{}, true, err
		}
	}
	return cfg, true, nil
}

// MaxSurgeOf converts an int-or-percent ("3", 3 or "50%") into a MaxSurge.
func MaxSurgeOf(v intstr.IntOrString) (MaxSurge, error) {
	if v.Type == intstr.Int {
		if v.IntVal < 0 {
			return MaxSurge{}, fmt.Errorf("spec.distribution.failover.maxSurge %d is negative", v.IntVal)
		}
		return SurgeReplicas(v.IntVal), nil
	}
	s, percent := strings.CutSuffix(v.StrVal, "%")
	n, err := strconv.ParseInt(s, 10, 32)
	if err != nil || n < 0 {
		return MaxSurge{}, fmt.Errorf("spec.distribution.failover.maxSurge %q is neither a non-negative number nor a percentage such as \"100%%\"", v.StrVal)
	}
	if percent {
		return SurgePercent(int32(n)), nil
	}
	return SurgeReplicas(int32(n)), nil
}

// FailoverStateFromStatus reads the hysteresis a Workload's status kept (nil: none).
func FailoverStateFromStatus(st *polykubev1alpha1.FailoverStatus) FailoverState {
	if st == nil {
		return FailoverState{}
	}
	var s FailoverState
	for _, p := range st.Peers {
		s.Peers = append(s.Peers, PeerFailover{
			Cluster:      p.Cluster,
			Absorbed:     p.AbsorbedReplicas,
			ActiveSince:  timeOf(p.Since),
			PendingSince: timeOf(p.PendingSince),
			PendingTo:    p.PendingReplicas,
		})
	}
	sort.Slice(s.Peers, func(i, j int) bool { return s.Peers[i].Cluster < s.Peers[j].Cluster })
	return s
}

// HandoverFromStatus is the handover kept in a Workload's status.failover.
func HandoverFromStatus(st *polykubev1alpha1.FailoverStatus) Handover {
	if st == nil || st.Handover == nil {
		return Handover{}
	}
	return Handover{Held: st.Handover.HeldReplicas, Until: st.Handover.Until.Time}
}

// HandoverStatusOf is the status form of a handover (nil when none), listing at most
// maxWaiting of the targets waited for.
func HandoverStatusOf(h Handover, maxWaiting int) *polykubev1alpha1.HandoverStatus {
	if !h.Active() {
		return nil
	}
	return &polykubev1alpha1.HandoverStatus{
		HeldReplicas: h.Held,
		Until:        metav1.NewTime(h.Until),
		Waiting:      slices.Clone(h.Waiting[:min(len(h.Waiting), maxWaiting)]),
		WaitingCount: int32(len(h.Waiting)),
	}
}

// FailoverStatusOf is the status form of this cluster's failover: the state and what it runs.
// metav1.Time keeps whole seconds, so callers pass times truncated to the second for the state
// to round-trip exactly.
func FailoverStatusOf(state FailoverState, f Failover) *polykubev1alpha1.FailoverStatus {
	st := &polykubev1alpha1.FailoverStatus{BaseReplicas: f.Base, ExtraReplicas: f.Extra, EffectiveReplicas: f.Replicas}
	for _, p := range state.Peers {
		st.Peers = append(st.Peers, polykubev1alpha1.PeerFailoverStatus{
			Cluster:          p.Cluster,
			AbsorbedReplicas: p.Absorbed,
			Since:            metaTimeOf(p.ActiveSince),
			PendingSince:     metaTimeOf(p.PendingSince),
			PendingReplicas:  p.PendingTo,
		})
	}
	return st
}

func timeOf(t *metav1.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return t.Time
}

func metaTimeOf(t time.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	mt := metav1.NewTime(t)
	return &mt
}
