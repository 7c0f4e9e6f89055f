package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/quick"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// formatBounds renders bounds as "a=1..7" (Min..Max; MinShare when it differs, "a=0>1..6").
func formatBounds(a BoundsAllocation) string {
	s := ""
	for i, b := range a {
		if i > 0 {
			s += " "
		}
		if b.MinShare != b.Min {
			s += fmt.Sprintf("%s=%d>%d..%d", b.Cluster, b.MinShare, b.Min, b.Max)
		} else {
			s += fmt.Sprintf("%s=%d..%d", b.Cluster, b.Min, b.Max)
		}
	}
	return s
}

// byWeight is a MultiCloudWeighted spec for autoscaling: weights only, no total.
func byWeight(key string, weights ...int32) Spec {
	s := weighted(key, 0, weights...)
	s.Total = nil
	return s
}

func staticTarget(cluster string, min, max int32) Target {
	return Target{Cluster: cluster, Replicas: i32(min), MaxReplicas: i32(max)}
}

func TestAllocateBounds_Examples(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		totals *Totals
		want   string
	}{
		{
			name: "weighted 60/40 between 10 and 50",
			spec: byWeight("production/billing-api", 60, 40), totals: &Totals{Min: 10, Max: 50},
			want: "a=6..30 b=4..20",
		},
		{
			name: "three equal weights: the tie-break is the allocation's",
			spec: byWeight("production/checkout", 1, 1, 1), totals: &Totals{Min: 7, Max: 7},
			want: "a=3..3 b=2..2 c=2..2",
		},
		{
			name: "a share of the minimum of 0 becomes an HPA minimum of 1",
			spec: byWeight("ns/w", 1, 1, 1), totals: &Totals{Min: 2, Max: 20},
			want: formatBounds(mustBounds(t, byWeight("ns/w", 1, 1, 1), &Totals{Min: 2, Max: 20})),
		},
		{
			name: "a weight-0 target runs no HPA",
			spec: byWeight("ns/w", 1, 0), totals: &Totals{Min: 2, Max: 8},
			want: "a=2..8 b=0..0",
		},
		{
			name: "a maximum too small to reach every cluster leaves one at 0..0",
			spec: byWeight("ns/w", 1, 1), totals: &Totals{Min: 1, Max: 1},
			want: formatBounds(mustBounds(t, byWeight("ns/w", 1, 1), &Totals{Min: 1, Max: 1})),
		},
		{
			name: "static: replicas is the minimum, maxReplicas the maximum",
			spec: Spec{Key: "ns/w", Strategy: Static, Targets: []Target{staticTarget("b", 1, 4), staticTarget("a", 2, 10), staticTarget("c", 0, 0)}},
			want: "a=2..10 b=1..4 c=0..0",
		},
		{
			name: "static 0..3 is raised to an HPA minimum of 1",
			spec: Spec{Key: "ns/w", Strategy: Static, Targets: []Target{staticTarget("a", 0, 3)}},
			want: "a=0>1..3",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := AllocateBounds(tt.spec, tt.totals)
			if err != nil {
				t.Fatalf("AllocateBounds: %v", err)
			}
			if s := formatBounds(got); s != tt.want {
				t.Fatalf("got %s, want %s", s, tt.want)
			}
		})
	}

	// The two cases whose answer depends on the tie-break: stated as properties.
	b := mustBounds(t, byWeight("ns/w", 1, 1, 1), &Totals{Min: 2, Max: 20})
	raised := 0
	for _, x := range b {
		if x.MinShare == 0 {
			raised++
			if x.Min != 1 {
				t.Errorf("%s: share 0 of the minimum, HPA minimum %d, want 1", x.Cluster, x.Min)
			}
		}
	}
	if raised != 1 {
		t.Errorf("2 over 3 equal weights: %d targets with a share of 0, want 1: %s", raised, formatBounds(b))
	}
	b = mustBounds(t, byWeight("ns/w", 1, 1), &Totals{Min: 1, Max: 1})
	if s := formatBounds(b); s != "a=1..1 b=0..0" && s != "a=0..0 b=1..1" {
		t.Errorf("1 over 2 equal weights: %s", s)
	}
}

func mustBounds(t *testing.T, spec Spec, totals *Totals) BoundsAllocation {
	t.Helper()
	b, err := AllocateBounds(spec, totals)
	if err != nil {
		t.Fatalf("AllocateBounds: %v", err)
	}
	return b
}

func TestAllocateBounds_Invalid(t *testing.T) {
	tests := []struct {
		name   string
		spec   Spec
		totals *Totals
	}{
		{"weighted without totals", byWeight("ns/w", 1, 1), nil},
		{"weighted with distribution.replicas", weighted("ns/w", 5, 1, 1), &Totals{Min: 1, Max: 5}},
		{"weighted min above max", byWeight("ns/w", 1, 1), &Totals{Min: 6, Max: 5}},
		{"weighted max 0", byWeight("ns/w", 1, 1), &Totals{Min: 0, Max: 0}},
		{"weighted with explicit replicas", Spec{Key: "ns/w", Strategy: MultiCloudWeighted, Targets: []Target{{Cluster: "a", Replicas: i32(1)}, {Cluster: "b", Weight: i32(1)}}}, &Totals{Min: 1, Max: 3}},
		{"weighted with maxReplicas", Spec{Key: "ns/w", Strategy: MultiCloudWeighted, Targets: []Target{{Cluster: "a", Weight: i32(1), MaxReplicas: i32(3)}}}, &Totals{Min: 1, Max: 3}},
		{"weighted, every weight 0", byWeight("ns/w", 0, 0), &Totals{Min: 1, Max: 3}},
		{"static with totals", Spec{Key: "ns/w", Strategy: Static, Targets: []Target{staticTarget("a", 1, 2)}}, &Totals{Min: 1, Max: 2}},
		{"static without maxReplicas", Spec{Key: "ns/w", Strategy: Static, Targets: []Target{{Cluster: "a", Replicas: i32(1)}}}, nil},
		{"static replicas above maxReplicas", Spec{Key: "ns/w", Strategy: Static, Targets: []Target{staticTarget("a", 3, 2)}}, nil},
		{"static without replicas", Spec{Key: "ns/w", Strategy: Static, Targets: []Target{{Cluster: "a", MaxReplicas: i32(2)}}}, nil},
		{"unknown strategy", Spec{Key: "ns/w", Strategy: "Spread", Targets: []Target{staticTarget("a", 1, 2)}}, nil},
		{"no targets", Spec{Key: "ns/w", Strategy: MultiCloudWeighted}, &Totals{Min: 1, Max: 2}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if b, err := AllocateBounds(tt.spec, tt.totals); !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v (%s)", err, formatBounds(b))
			}
		})
	}
}

// checkBounds states what every autoscaling split must satisfy; "" when it does.
func checkBounds(spec Spec, totals Totals) string {
	b, err := AllocateBounds(spec, &totals)
	if err != nil {
		return fmt.Sprintf("valid spec rejected: %v", err)
	}
	if len(b) != len(spec.Targets) {
		return fmt.Sprintf("%d bounds for %d targets", len(b), len(spec.Targets))
	}
	var sumMin, sumMax int64
	for i, x := range b {
		if i > 0 && b[i-1].Cluster >= x.Cluster {
			return "not sorted by cluster: " + formatBounds(b)
		}
		if x.MinShare > x.Max || x.Min > x.Max {
			return fmt.Sprintf("%s: minimum above maximum: %s", x.Cluster, formatBounds(b))
		}
		if (x.Min >= 1) != (x.Max >= 1) || x.Min < x.MinShare || x.Min > max(x.MinShare, 1) {
			return fmt.Sprintf("%s: HPA minimum %d for share %d and maximum %d", x.Cluster, x.Min, x.MinShare, x.Max)
		}
		sumMin += int64(x.MinShare)
		sumMax += int64(x.Max)
	}
	if sumMin != int64(totals.Min) || sumMax != int64(totals.Max) {
		return fmt.Sprintf("shares add up to %d..%d, totals are %d..%d: %s", sumMin, sumMax, totals.Min, totals.Max, formatBounds(b))
	}
	// Each bound is the allocation of its total.
	for _, total := range []int32{totals.Min, totals.Max} {
		s := spec
		s.Total = i32(total)
		a, _ := Allocate(s)
		for i, share := range a {
			if got := b[i].MinShare; total == totals.Min && got != share.Replicas {
				return fmt.Sprintf("%s: share of the minimum %d, Allocate gives %d", share.Cluster, got, share.Replicas)
			}
			if got := b[i].Max; total == totals.Max && got != share.Replicas {
				return fmt.Sprintf("%s: maximum %d, Allocate gives %d", share.Cluster, got, share.Replicas)
			}
		}
	}
	// Deterministic, and the order of the targets does not matter.
	again, _ := AllocateBounds(spec, &totals)
	reversed := spec
	reversed.Targets = make([]Target, len(spec.Targets))
	for i, t := range spec.Targets {
		reversed.Targets[len(spec.Targets)-1-i] = t
	}
	other, _ := AllocateBounds(reversed, &totals)
	if formatBounds(again) != formatBounds(b) || formatBounds(other) != formatBounds(b) {
		return fmt.Sprintf("not deterministic: %s, %s, reversed %s", formatBounds(b), formatBounds(again), formatBounds(other))
	}
	return ""
}

// randomBoundsSpec is a MultiCloudWeighted spec for autoscaling: weights only, no total.
func randomBoundsSpec(r *rand.Rand, n int) Spec {
	s := randomWeighted(r, n, 0)
	s.Total = nil
	return s
}

func TestAllocateBounds_Properties(t *testing.T) {
	r := rand.New(rand.NewPCG(8, 16))
	for iter := range 3000 {
		spec := randomBoundsSpec(r, 1+r.IntN(12))
		lo := int32(1 + r.IntN(100))
		hi := lo + int32(r.IntN(300))
		if msg := checkBounds(spec, Totals{Min: lo, Max: hi}); msg != "" {
			t.Fatalf("iter %d: %s\nspec %+v totals %d..%d", iter, msg, spec, lo, hi)
		}
		// Raising either total never lowers a target's bound.
		b, _ := AllocateBounds(spec, &Totals{Min: lo, Max: hi})
		more, _ := AllocateBounds(spec, &Totals{Min: lo + 1, Max: hi + 1 + int32(r.IntN(10))})
		for i := range b {
			if more[i].MinShare < b[i].MinShare || more[i].Max < b[i].Max {
				t.Fatalf("iter %d: raising the totals lowered %s: %s -> %s", iter, b[i].Cluster, formatBounds(b), formatBounds(more))
			}
		}
	}
}

// TestAllocateBounds_Quick states the same with testing/quick's generator.
func TestAllocateBounds_Quick(t *testing.T) {
	f := func(weights []uint8, lo uint16, span uint16) bool {
		if len(weights) == 0 {
			return true
		}
		if len(weights) > 40 {
			weights = weights[:40]
		}
		spec := Spec{Key: "ns/quick", Strategy: MultiCloudWeighted}
		for i, w := range weights {
			spec.Targets = append(spec.Targets, Target{Cluster: fmt.Sprintf("c%02d", i), Weight: i32(int32(w))})
		}
		spec.Targets[0].Weight = i32(int32(weights[0]) + 1)
		totals := Totals{Min: 1 + int32(lo%5000), Max: 1 + int32(lo%5000) + int32(span%5000)}
		if msg := checkBounds(spec, totals); msg != "" {
			t.Log(msg)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 500}); err != nil {
		t.Fatal(err)
	}
}

func TestAllocateBounds_StaticProperties(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 9))
	for iter := range 1000 {
		spec := Spec{Key: "ns/static", Strategy: Static}
		for i := range 1 + r.IntN(10) {
			lo := int32(r.IntN(20))
			spec.Targets = append(spec.Targets, staticTarget(fmt.Sprintf("c%02d", i), lo, lo+int32(r.IntN(20))))
		}
		b, err := AllocateBounds(spec, nil)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		for _, t0 := range spec.Targets {
			x, ok := b.For(t0.Cluster)
			if !ok || x.MinShare != *t0.Replicas || x.Max != *t0.MaxReplicas || x.Min > x.Max || (x.Min >= 1) != (x.Max >= 1) {
				t.Fatalf("iter %d: %s: %+v for replicas %d maxReplicas %d", iter, t0.Cluster, x, *t0.Replicas, *t0.MaxReplicas)
			}
		}
	}
}

// TestAllocateBounds_Golden pins a split so that a change of the algorithm, which would make
// operators of different versions give the same cluster different HPA bounds, is noticed.
func TestAllocateBounds_Golden(t *testing.T) {
	b := mustBounds(t, byWeight("production/checkout", 3, 2, 1), &Totals{Min: 4, Max: 25})
	const want = "a=2..13 b=1..8 c=1..4"
	if got := formatBounds(b); got != want {
		t.Fatalf("golden bounds changed: got %s, want %s", got, want)
	}
}

func FuzzAllocateBounds(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint16(2), uint16(20))
	f.Add(uint64(7), uint8(1), uint16(1), uint16(0))
	f.Add(uint64(42), uint8(30), uint16(999), uint16(5000))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, lo, span uint16) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		spec := randomBoundsSpec(r, 1+int(n)%64)
		totals := Totals{Min: 1 + int32(lo%20000), Max: 1 + int32(lo%20000) + int32(span%20000)}
		if msg := checkBounds(spec, totals); msg != "" {
			t.Fatalf("%s\nspec %+v totals %+v", msg, spec, totals)
		}
	})
}

func autoscaledWorkload(strategy string, a *polykubev1alpha1.Autoscaling, targets ...polykubev1alpha1.DistributionTarget) *polykubev1alpha1.Workload {
	return &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: polykubev1alpha1.WorkloadSpec{
			Distribution: polykubev1alpha1.Distribution{Strategy: strategy, Targets: targets},
			Autoscaling:  a,
		},
	}
}

func TestBoundsForWorkloadIn(t *testing.T) {
	w := autoscaledWorkload(MultiCloudWeighted, &polykubev1alpha1.Autoscaling{MinReplicas: i32(4), MaxReplicas: i32(20)},
		explicit("aws-eu", nil, i32(1)))
	w.Spec.Distribution.TargetSelectors = []polykubev1alpha1.TargetSelector{rule(map[string]string{"polykube.kismet.io/provider": "gcp"}, nil, i32(1))}

	b, ok, err := BoundsForWorkloadIn(w, testRoster)
	if err != nil || !ok {
		t.Fatalf("BoundsForWorkloadIn: %v, %v", ok, err)
	}
	// aws-eu, gcp-eu and gcp-us with weight 1 each: 4 and 20 split three ways.
	if len(b) != 3 || checkBounds(Spec{Key: "shop/api", Strategy: MultiCloudWeighted, Targets: []Target{
		{Cluster: "aws-eu", Weight: i32(1)}, {Cluster: "gcp-eu", Weight: i32(1)}, {Cluster: "gcp-us", Weight: i32(1)},
	}}, Totals{Min: 4, Max: 20}) != "" {
		t.Fatalf("bounds %s", formatBounds(b))
	}
	// The allocation of an autoscaled Workload is its floors.
	alloc, err := ForWorkloadIn(w, testRoster)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(alloc) != fmt.Sprint(b.Floors()) {
		t.Fatalf("ForWorkloadIn %v, floors %v", alloc, b.Floors())
	}

	// Static: per target.
	s := autoscaledWorkload(Static, &polykubev1alpha1.Autoscaling{},
		polykubev1alpha1.DistributionTarget{ClusterRef: "a", Replicas: i32(2), MaxReplicas: i32(6)},
		polykubev1alpha1.DistributionTarget{ClusterRef: "b", Replicas: i32(0), MaxReplicas: i32(0)})
	b, _, err = BoundsForWorkloadIn(s, nil)
	if err != nil || formatBounds(b) != "a=2..6 b=0..0" {
		t.Fatalf("static: %s, %v", formatBounds(b), err)
	}
	if alloc, err := ForWorkload(s); err != nil || fmt.Sprint(alloc) != "[{a 2} {b 0}]" {
		t.Fatalf("static ForWorkload: %v, %v", alloc, err)
	}

	// Not autoscaled.
	if _, ok, err := BoundsForWorkloadIn(autoscaledWorkload(Static, nil, explicit("a", i32(1), nil)), nil); ok || err != nil {
		t.Fatalf("without spec.autoscaling: ok %v err %v", ok, err)
	}

	// Combined with failover, or half the totals: invalid, as the API server says.
	f := w.DeepCopy()
	f.Spec.Distribution.Failover = &polykubev1alpha1.Failover{}
	if _, _, err := BoundsForWorkloadIn(f, testRoster); !errors.Is(err, ErrInvalid) {
		t.Fatalf("with failover: %v", err)
	}
	if _, err := ForWorkloadIn(f, testRoster); !errors.Is(err, ErrInvalid) {
		t.Fatalf("ForWorkloadIn with failover: %v", err)
	}
	h := w.DeepCopy()
	h.Spec.Autoscaling.MinReplicas = nil
	if _, _, err := BoundsForWorkloadIn(h, testRoster); !errors.Is(err, ErrInvalid) {
		t.Fatalf("only maxReplicas: %v", err)
	}
}

func TestSpecHash_CoversAutoscaling(t *testing.T) {
	w := autoscaledWorkload(Static, nil, explicit("a", i32(1), nil))
	before := SpecHash(w.Spec)
	w.Spec.Autoscaling = &polykubev1alpha1.Autoscaling{}
	w.Spec.Distribution.Targets[0].MaxReplicas = i32(3)
	if SpecHash(w.Spec) == before {
		t.Fatal("spec.autoscaling does not change the spec hash")
	}
}
