package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func i32(v int32) *int32 { return &v }

func TestAllocate_Examples(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
		want map[string]int32
	}{
		{
			name: "article billing-api: explicit replicas stand",
			spec: Spec{Key: "production/billing-api", Strategy: MultiCloudWeighted, Targets: []Target{
				{Cluster: "aws-eu-central-1", Replicas: i32(6), Weight: i32(60)},
				{Cluster: "gcp-europe-west3", Replicas: i32(4), Weight: i32(40)},
			}},
			want: map[string]int32{"aws-eu-central-1": 6, "gcp-europe-west3": 4},
		},
		{
			name: "total split by weight 60/40",
			spec: Spec{Key: "production/billing-api", Strategy: MultiCloudWeighted, Total: i32(10), Targets: []Target{
				{Cluster: "aws-eu-central-1", Weight: i32(60)},
				{Cluster: "gcp-europe-west3", Weight: i32(40)},
			}},
			want: map[string]int32{"aws-eu-central-1": 6, "gcp-europe-west3": 4},
		},
		{
			name: "total 12 by weight 60/40 rounds by Webster",
			spec: Spec{Key: "production/billing-api", Strategy: MultiCloudWeighted, Total: i32(12), Targets: []Target{
				{Cluster: "aws-eu-central-1", Weight: i32(60)},
				{Cluster: "gcp-europe-west3", Weight: i32(40)},
				{Cluster: "onprem-fra", Weight: i32(0)},
			}},
			want: map[string]int32{"aws-eu-central-1": 7, "gcp-europe-west3": 5, "onprem-fra": 0},
		},
		{
			name: "explicit replicas are taken out of the total first",
			spec: Spec{Key: "ns/w", Strategy: MultiCloudWeighted, Total: i32(10), Targets: []Target{
				{Cluster: "a", Replicas: i32(4)},
				{Cluster: "b", Weight: i32(1)},
				{Cluster: "c", Weight: i32(1)},
			}},
			want: map[string]int32{"a": 4, "b": 3, "c": 3},
		},
		{
			name: "2:1 weights with 2 replicas do not put both on one cluster",
			spec: Spec{Key: "ns/w", Strategy: MultiCloudWeighted, Total: i32(2), Targets: []Target{
				{Cluster: "a", Weight: i32(2)},
				{Cluster: "b", Weight: i32(1)},
			}},
			want: map[string]int32{"a": 1, "b": 1},
		},
		{
			name: "static",
			spec: Spec{Key: "ns/w", Strategy: Static, Targets: []Target{
				{Cluster: "a", Replicas: i32(3)},
				{Cluster: "b", Replicas: i32(0)},
			}},
			want: map[string]int32{"a": 3, "b": 0},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Allocate(tt.spec)
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			for c, w := range tt.want {
				if r, ok := got.For(c); !ok || r != w {
					t.Errorf("cluster %s: got %d (target=%v), want %d; all: %v", c, r, ok, w, got)
				}
			}
		})
	}
}

func TestAllocate_Invalid(t *testing.T) {
	tests := []struct {
		name string
		spec Spec
	}{
		{"no targets", Spec{Strategy: Static}},
		{"unknown strategy", Spec{Strategy: "Spread", Targets: []Target{{Cluster: "a", Replicas: i32(1)}}}},
		{"static without replicas", Spec{Strategy: Static, Targets: []Target{{Cluster: "a"}}}},
		{"static with total", Spec{Strategy: Static, Total: i32(1), Targets: []Target{{Cluster: "a", Replicas: i32(1)}}}},
		{"duplicate cluster", Spec{Strategy: Static, Targets: []Target{{Cluster: "a", Replicas: i32(1)}, {Cluster: "a", Replicas: i32(1)}}}},
		{"weighted without total or replicas", Spec{Strategy: MultiCloudWeighted, Targets: []Target{{Cluster: "a", Weight: i32(1)}}}},
		{"weighted target without weight", Spec{Strategy: MultiCloudWeighted, Total: i32(3), Targets: []Target{{Cluster: "a"}}}},
		{"explicit exceeds total", Spec{Strategy: MultiCloudWeighted, Total: i32(3), Targets: []Target{{Cluster: "a", Replicas: i32(4)}}}},
		{"all weights zero", Spec{Strategy: MultiCloudWeighted, Total: i32(3), Targets: []Target{{Cluster: "a", Weight: i32(0)}}}},
		{"negative replicas", Spec{Strategy: Static, Targets: []Target{{Cluster: "a", Replicas: i32(-1)}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := Allocate(tt.spec); !errors.Is(err, ErrInvalid) {
				t.Fatalf("want ErrInvalid, got %v", err)
			}
		})
	}
}

// randomWeighted returns a valid MultiCloudWeighted spec with n weighted targets.
func randomWeighted(r *rand.Rand, n int, total int32) Spec {
	s := Spec{Key: fmt.Sprintf("ns-%d/w-%d", r.IntN(5), r.IntN(1000)), Strategy: MultiCloudWeighted, Total: i32(total)}
	for i := range n {
		s.Targets = append(s.Targets, Target{Cluster: fmt.Sprintf("c%02d", i), Weight: i32(int32(r.IntN(100)))})
	}
	s.Targets[r.IntN(n)].Weight = i32(int32(1 + r.IntN(100))) // at least one positive weight
	return s
}

func TestAllocate_Properties(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for iter := range 2000 {
		n := 1 + r.IntN(8)
		total := int32(r.IntN(200))
		spec := randomWeighted(r, n, total)
		a, err := Allocate(spec)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		// The sum is the total.
		if a.Total() != int64(total) {
			t.Fatalf("iter %d: sum %d != total %d: %v", iter, a.Total(), total, a)
		}
		// Raising the total never lowers a cluster.
		bigger := spec
		bigger.Total = i32(total + 1 + int32(r.IntN(20)))
		b, err := Allocate(bigger)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range a {
			if got, _ := b.For(s.Cluster); got < s.Replicas {
				t.Fatalf("iter %d: raising total %d->%d lowered %s from %d to %d", iter, total, *bigger.Total, s.Cluster, s.Replicas, got)
			}
		}
		// Target order does not matter.
		shuffled := spec
		shuffled.Targets = append([]Target(nil), spec.Targets...)
		r.Shuffle(len(shuffled.Targets), func(i, j int) { shuffled.Targets[i], shuffled.Targets[j] = shuffled.Targets[j], shuffled.Targets[i] })
		c, err := Allocate(shuffled)
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(a) != fmt.Sprint(c) {
			t.Fatalf("iter %d: order changed the result: %v vs %v", iter, a, c)
		}
	}
}

func TestAllocate_EqualWeightsDifferByAtMostOne(t *testing.T) {
	for n := 1; n <= 12; n++ {
		for total := int32(0); total <= 60; total++ {
			spec := Spec{Key: "ns/eq", Strategy: MultiCloudWeighted, Total: i32(total)}
			for i := range n {
				spec.Targets = append(spec.Targets, Target{Cluster: fmt.Sprintf("c%d", i), Weight: i32(7)})
			}
			a, err := Allocate(spec)
			if err != nil {
				t.Fatal(err)
			}
			lo, hi := a[0].Replicas, a[0].Replicas
			for _, s := range a {
				lo, hi = min(lo, s.Replicas), max(hi, s.Replicas)
			}
			if hi-lo > 1 {
				t.Fatalf("n=%d total=%d: equal weights differ by %d: %v", n, total, hi-lo, a)
			}
		}
	}
}

// TestAllocate_Golden pins results so that a change in the algorithm, which would make
// operators of different versions disagree, is noticed.
func TestAllocate_Golden(t *testing.T) {
	spec := Spec{Key: "production/checkout", Strategy: MultiCloudWeighted, Total: i32(7), Targets: []Target{
		{Cluster: "a", Weight: i32(1)}, {Cluster: "b", Weight: i32(1)}, {Cluster: "c", Weight: i32(1)},
	}}
	a, err := Allocate(spec)
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(a)
	const want = "[{a 3} {b 2} {c 2}]"
	if got != want {
		t.Fatalf("golden allocation changed: got %s, want %s", got, want)
	}
}

func FuzzAllocate(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint16(10))
	f.Add(uint64(7), uint8(1), uint16(0))
	f.Add(uint64(42), uint8(8), uint16(999))
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, total uint16) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		count := 1 + int(n)%16
		spec := randomWeighted(r, count, int32(total))
		// Some targets get explicit replicas within the total.
		left := int32(total)
		for i := range spec.Targets {
			if r.IntN(4) == 0 && left > 0 && i > 0 {
				v := int32(r.IntN(int(left) + 1))
				spec.Targets[i].Replicas = i32(v)
				left -= v
			}
		}
		if !hasPositiveWeightWithoutReplicas(spec) && left > 0 {
			spec.Targets[0].Replicas, spec.Targets[0].Weight = nil, i32(1)
		}
		a, err := Allocate(spec)
		if err != nil {
			t.Fatalf("valid spec rejected: %v (%+v)", err, spec)
		}
		if a.Total() != int64(total) {
			t.Fatalf("sum %d != total %d", a.Total(), total)
		}
		again, _ := Allocate(spec)
		if fmt.Sprint(a) != fmt.Sprint(again) {
			t.Fatal("not deterministic")
		}
		bigger := spec
		bigger.Total = i32(int32(total) + 1)
		b, err := Allocate(bigger)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range a {
			if got, _ := b.For(s.Cluster); got < s.Replicas {
				t.Fatalf("raising the total lowered %s", s.Cluster)
			}
		}
	})
}

func hasPositiveWeightWithoutReplicas(s Spec) bool {
	for _, t := range s.Targets {
		if t.Replicas == nil && t.Weight != nil && *t.Weight > 0 {
			return true
		}
	}
	return false
}

func BenchmarkAllocate_LargeTotal(b *testing.B) {
	spec := Spec{Key: "ns/big", Strategy: MultiCloudWeighted, Total: i32(100000)}
	for i := range 255 {
		spec.Targets = append(spec.Targets, Target{Cluster: fmt.Sprintf("c%03d", i), Weight: i32(int32(1 + i%17))})
	}
	for b.Loop() {
		if _, err := Allocate(spec); err != nil {
			b.Fatal(err)
		}
	}
}
