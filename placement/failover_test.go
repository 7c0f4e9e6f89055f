package placement

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
	"testing/quick"
)

func weighted(key string, total int32, weights ...int32) Spec {
	s := Spec{Key: key, Strategy: MultiCloudWeighted, Total: i32(total)}
	for i, w := range weights {
		s.Targets = append(s.Targets, Target{Cluster: string(rune('a' + i)), Weight: i32(w)})
	}
	return s
}

func TestPlanFailover_Examples(t *testing.T) {
	tests := []struct {
		name     string
		spec     Spec
		deficits Deficits
		surge    MaxSurge
		// want is cluster -> effective replicas; extra is Absorbed.
		want     map[string]int32
		absorbed int64
	}{
		{
			name: "failure-isolation: 9 over 3, alpha down, the others absorb its 3",
			spec: weighted("demo/web", 9, 1, 1, 1), deficits: Deficits{"a": 3}, surge: DefaultMaxSurge,
			want: map[string]int32{"a": 3, "b": 4, "c": 5}, absorbed: 3,
		},
		{
			name: "no deficit is the allocation",
			spec: weighted("demo/web", 9, 1, 1, 1), deficits: nil, surge: DefaultMaxSurge,
			want: map[string]int32{"a": 3, "b": 3, "c": 3},
		},
		{
			name: "split by base share 6:3 like the weights",
			spec: weighted("ns/w", 12, 2, 1, 1), deficits: Deficits{"c": 3}, surge: DefaultMaxSurge,
			want: map[string]int32{"a": 8, "b": 4, "c": 3}, absorbed: 3,
		},
		{
			name: "a cap of 1 replica leaves the rest uncovered",
			spec: weighted("ns/w", 9, 1, 1, 1), deficits: Deficits{"a": 3}, surge: SurgeReplicas(1),
			want: map[string]int32{"a": 3, "b": 4, "c": 4}, absorbed: 2,
		},
		{
			name: "percent of base rounds up: 10% of 3 is 1",
			spec: weighted("ns/w", 9, 1, 1, 1), deficits: Deficits{"a": 3}, surge: SurgePercent(10),
			want: map[string]int32{"a": 3, "b": 4, "c": 4}, absorbed: 2,
		},
		{
			name: "maxSurge 0 turns failover off",
			spec: weighted("ns/w", 9, 1, 1, 1), deficits: Deficits{"a": 3}, surge: SurgeReplicas(0),
			want: map[string]int32{"a": 3, "b": 3, "c": 3},
		},
		{
			name: "a partial deficit (a lost node pool) is absorbed too",
			spec: weighted("ns/w", 9, 1, 1, 1), deficits: Deficits{"a": 1}, surge: DefaultMaxSurge,
			want: map[string]int32{"a": 3, "b": 4, "c": 3}, absorbed: 1,
		},
		{
			name: "a deficit above the base counts as the base; unknown clusters are ignored",
			spec: weighted("ns/w", 9, 1, 1, 1), deficits: Deficits{"a": 50, "zz": 7, "b": -2}, surge: DefaultMaxSurge,
			want: map[string]int32{"a": 3, "b": 5, "c": 4}, absorbed: 3,
		},
		{
			name: "partition: both sides see the other down and both surge, capped",
			spec: weighted("ns/w", 6, 1, 1), deficits: Deficits{"b": 3}, surge: SurgePercent(50),
			want: map[string]int32{"a": 5, "b": 3}, absorbed: 2,
		},
		{
			name: "every cluster short: nobody absorbs",
			spec: weighted("ns/w", 9, 1, 1, 1), deficits: Deficits{"a": 1, "b": 1, "c": 1}, surge: DefaultMaxSurge,
			want: map[string]int32{"a": 3, "b": 3, "c": 3},
		},
		{
			name: "a weight-0 standby absorbs nothing",
			spec: weighted("ns/w", 6, 1, 1, 0), deficits: Deficits{"a": 3}, surge: SurgeReplicas(10),
			want: map[string]int32{"a": 3, "b": 6, "c": 0}, absorbed: 3,
		},
		{
			name: "static replicas are the weights",
			spec: Spec{Key: "ns/s", Strategy: Static, Targets: []Target{
				{Cluster: "a", Replicas: i32(4)}, {Cluster: "b", Replicas: i32(2)}, {Cluster: "c", Replicas: i32(3)},
			}},
			deficits: Deficits{"c": 3}, surge: DefaultMaxSurge,
			want: map[string]int32{"a": 6, "b": 3, "c": 3}, absorbed: 3,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := PlanFailover(tt.spec, tt.deficits, tt.surge)
			if err != nil {
				t.Fatalf("PlanFailover: %v", err)
			}
			if len(plan.Shares) != len(tt.want) {
				t.Fatalf("got %+v, want %v", plan.Shares, tt.want)
			}
			for c, w := range tt.want {
				if s, ok := plan.For(c); !ok || s.Replicas() != w {
					t.Errorf("cluster %s: got %d (target=%v), want %d; plan %+v", c, s.Replicas(), ok, w, plan.Shares)
				}
			}
			if plan.Absorbed != tt.absorbed {
				t.Errorf("absorbed %d, want %d", plan.Absorbed, tt.absorbed)
			}
			if plan.Active() != (tt.absorbed > 0) {
				t.Errorf("Active() = %v with %d absorbed", plan.Active(), tt.absorbed)
			}
		})
	}
}

func TestFailoverFor(t *testing.T) {
	spec := weighted("demo/web", 9, 1, 1, 1)
	tests := []struct {
		cluster  string
		deficits Deficits
		want     Failover
	}{
		{"c", Deficits{"a": 3}, Failover{Cluster: "c", Base: 3, Extra: 2, Replicas: 5, Absorbs: []string{"a"}}},
		{"b", Deficits{"a": 3}, Failover{Cluster: "b", Base: 3, Extra: 1, Replicas: 4, Absorbs: []string{"a"}}},
		{"a", Deficits{"a": 3}, Failover{Cluster: "a", Base: 3, Replicas: 3}},
		{"c", nil, Failover{Cluster: "c", Base: 3, Replicas: 3}},
		{"c", Deficits{"a": 3, "b": 1}, Failover{Cluster: "c", Base: 3, Extra: 3, Replicas: 6, Absorbs: []string{"a", "b"}}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s %v", tt.cluster, tt.deficits), func(t *testing.T) {
			got, err := FailoverFor(spec, tt.cluster, tt.deficits, DefaultMaxSurge)
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPlanFailover_Invalid(t *testing.T) {
	if _, err := PlanFailover(weighted("ns/w", 3, 1), nil, SurgeReplicas(-1)); !errors.Is(err, ErrInvalid) {
		t.Errorf("negative maxSurge: want ErrInvalid, got %v", err)
	}
	if _, err := PlanFailover(Spec{Strategy: Static}, nil, DefaultMaxSurge); !errors.Is(err, ErrInvalid) {
		t.Errorf("invalid spec: want ErrInvalid, got %v", err)
	}
	if _, err := FailoverFor(weighted("ns/w", 3, 1), "nope", nil, DefaultMaxSurge); !errors.Is(err, ErrInvalid) {
		t.Errorf("not a target: want ErrInvalid, got %v", err)
	}
}

// TestPlanFailover_Golden pins a split, like TestAllocate_Golden: operators of different
// versions that saw the same deficits must not disagree. Base 8/5/5/2, b's 5 missing, caps
// 50% (4/3/1): a 8/1, c 5/1, a 8/3, d 2/1 (d full), c 5/3 > a 8/5.
func TestPlanFailover_Golden(t *testing.T) {
	plan, err := PlanFailover(weighted("production/checkout", 20, 3, 2, 2, 1), Deficits{"b": 5}, SurgePercent(50))
	if err != nil {
		t.Fatal(err)
	}
	got := fmt.Sprint(plan)
	const want = "{[{a 8 0 2} {b 5 5 0} {c 5 0 2} {d 2 0 1}] 5 5}"
	if got != want {
		t.Fatalf("golden failover changed: got %s, want %s", got, want)
	}
}

// randomFailover returns a valid spec, deficits over some of its targets and a maxSurge.
func randomFailover(r *rand.Rand, n int) (Spec, Deficits, MaxSurge) {
	var spec Spec
	if r.IntN(4) == 0 {
		spec = Spec{Key: fmt.Sprintf("ns/s-%d", r.IntN(1000)), Strategy: Static}
		for i := range n {
			spec.Targets = append(spec.Targets, Target{Cluster: fmt.Sprintf("c%02d", i), Replicas: i32(int32(r.IntN(20)))})
		}
	} else {
		spec = randomWeighted(r, n, int32(r.IntN(300)))
	}
	deficits := Deficits{}
	for _, t := range spec.Targets {
		if r.IntN(3) == 0 {
			deficits[t.Cluster] = int32(r.IntN(40) - 5)
		}
	}
	surge := SurgeReplicas(int32(r.IntN(12)))
	if r.IntN(2) == 0 {
		surge = SurgePercent(int32(r.IntN(250)))
	}
	return spec, deficits, surge
}

// checkFailover asserts the properties every plan has; it returns a description of the first
// violation, or "".
func checkFailover(spec Spec, deficits Deficits, surge MaxSurge) string {
	plan, err := PlanFailover(spec, deficits, surge)
	if err != nil {
		return fmt.Sprintf("valid input rejected: %v", err)
	}
	alloc, err := Allocate(spec)
	if err != nil {
		return fmt.Sprintf("Allocate: %v", err)
	}
	var extra, capacity int64
	for i, s := range plan.Shares {
		if s.Cluster != alloc[i].Cluster || s.Base != alloc[i].Replicas {
			return fmt.Sprintf("base %+v is not the allocation %+v", s, alloc[i])
		}
		if s.Replicas() < s.Base || s.Extra < 0 {
			return fmt.Sprintf("%s runs %d, below its base %d", s.Cluster, s.Replicas(), s.Base)
		}
		if limit := surge.capFor(s.Base); int64(s.Extra) > limit {
			return fmt.Sprintf("%s runs %d extra, above its cap %d", s.Cluster, s.Extra, limit)
		}
		if s.Deficit > 0 && s.Extra > 0 {
			return fmt.Sprintf("%s has a deficit %d and absorbs %d", s.Cluster, s.Deficit, s.Extra)
		}
		extra += int64(s.Extra)
		if s.Deficit == 0 {
			capacity += surge.capFor(s.Base)
		}
	}
	if extra != plan.Absorbed || extra > plan.Deficit {
		return fmt.Sprintf("extra %d, absorbed %d, deficit %d", extra, plan.Absorbed, plan.Deficit)
	}
	// Survivors absorb all they can: the deficit, or every cap filled.
	if extra != min(plan.Deficit, capacity) {
		return fmt.Sprintf("extra %d, want min(deficit %d, capacity %d)", extra, plan.Deficit, capacity)
	}
	again, _ := PlanFailover(spec, deficits, surge)
	if fmt.Sprint(plan) != fmt.Sprint(again) {
		return "not deterministic"
	}
	if len(deficits) == 0 || plan.Deficit == 0 {
		if plan.Active() {
			return fmt.Sprintf("no deficit but active: %+v", plan)
		}
	}
	return ""
}

func TestPlanFailover_Properties(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 6))
	for iter := range 3000 {
		spec, deficits, surge := randomFailover(r, 1+r.IntN(10))
		if msg := checkFailover(spec, deficits, surge); msg != "" {
			t.Fatalf("iter %d: %s\nspec %+v deficits %v surge %s", iter, msg, spec, deficits, surge)
		}
		plan, _ := PlanFailover(spec, deficits, surge)

		// No deficit: the allocation.
		none, _ := PlanFailover(spec, nil, surge)
		alloc, _ := Allocate(spec)
		for i, s := range none.Shares {
			if s.Replicas() != alloc[i].Replicas {
				t.Fatalf("iter %d: no deficit but %s runs %d, allocated %d", iter, s.Cluster, s.Replicas(), alloc[i].Replicas)
			}
		}

		// Target order does not matter.
		shuffled := spec
		shuffled.Targets = append([]Target(nil), spec.Targets...)
		r.Shuffle(len(shuffled.Targets), func(i, j int) { shuffled.Targets[i], shuffled.Targets[j] = shuffled.Targets[j], shuffled.Targets[i] })
		if other, _ := PlanFailover(shuffled, deficits, surge); fmt.Sprint(other) != fmt.Sprint(plan) {
			t.Fatalf("iter %d: order changed the plan: %+v vs %+v", iter, plan, other)
		}

		// FailoverFor is the plan's entry.
		c := spec.Targets[r.IntN(len(spec.Targets))].Cluster
		f, err := FailoverFor(spec, c, deficits, surge)
		s, _ := plan.For(c)
		if err != nil || f.Base != s.Base || f.Extra != s.Extra || f.Replicas != s.Replicas() || (len(f.Absorbs) > 0) != (s.Extra > 0) {
			t.Fatalf("iter %d: FailoverFor(%s) = %+v, %v; plan has %+v", iter, c, f, err, s)
		}

		// A larger deficit of a peer that already has one never lowers a survivor's extra.
		for peer, d := range deficits {
			if d <= 0 {
				continue
			}
			more := Deficits{}
			for k, v := range deficits {
				more[k] = v
			}
			more[peer] = d + 1 + int32(r.IntN(5))
			bigger, _ := PlanFailover(spec, more, surge)
			for i, s := range plan.Shares {
				if bigger.Shares[i].Extra < s.Extra {
					t.Fatalf("iter %d: raising %s's deficit lowered %s's extra %d -> %d", iter, peer, s.Cluster, s.Extra, bigger.Shares[i].Extra)
				}
			}
			break
		}
	}
}

// TestPlanFailover_SameDivisorMethod checks that, uncapped, the extra is exactly the allocation
// of the summed deficit over the survivors weighted by their base shares.
func TestPlanFailover_SameDivisorMethod(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 17))
	for iter := range 1000 {
		spec, deficits, _ := randomFailover(r, 2+r.IntN(8))
		plan, err := PlanFailover(spec, deficits, SurgeReplicas(1_000_000))
		if err != nil {
			t.Fatal(err)
		}
		equivalent := Spec{Key: spec.Key, Strategy: MultiCloudWeighted, Total: i32(int32(plan.Deficit))}
		positive := false
		for _, s := range plan.Shares {
			if s.Deficit == 0 {
				equivalent.Targets = append(equivalent.Targets, Target{Cluster: s.Cluster, Weight: i32(s.Base)})
				positive = positive || s.Base > 0
			}
		}
		if !positive {
			continue
		}
		alloc, err := Allocate(equivalent)
		if err != nil {
			t.Fatalf("iter %d: %v", iter, err)
		}
		for _, a := range alloc {
			if s, _ := plan.For(a.Cluster); s.Extra != a.Replicas {
				t.Fatalf("iter %d: %s extra %d, the divisor method gives %d", iter, a.Cluster, s.Extra, a.Replicas)
			}
		}
	}
}

// TestPlanFailover_Quick states the bounds with testing/quick's generator.
func TestPlanFailover_Quick(t *testing.T) {
	f := func(weights []uint8, total uint16, down uint16, deficit uint8, surge uint8, percent bool) bool {
		if len(weights) == 0 {
			return true
		}
		if len(weights) > 40 {
			weights = weights[:40]
		}
		spec := Spec{Key: "ns/quick", Strategy: MultiCloudWeighted, Total: i32(int32(total % 5000))}
		for i, w := range weights {
			spec.Targets = append(spec.Targets, Target{Cluster: fmt.Sprintf("c%02d", i), Weight: i32(int32(w))})
		}
		spec.Targets[0].Weight = i32(int32(weights[0]) + 1)
		deficits := Deficits{spec.Targets[int(down)%len(weights)].Cluster: int32(deficit)}
		m := MaxSurge{Value: int32(surge), Percent: percent}
		if msg := checkFailover(spec, deficits, m); msg != "" {
			t.Log(msg)
			return false
		}
		return true
	}
	if err := quick.Check(f, &quick.Config{MaxCount: 500}); err != nil {
		t.Fatal(err)
	}
}

func FuzzFailover(f *testing.F) {
	f.Add(uint64(1), uint8(3), uint16(9), uint64(0b001), uint8(100), true)
	f.Add(uint64(2), uint8(2), uint16(6), uint64(0b11), uint8(1), false)
	f.Add(uint64(99), uint8(50), uint16(5000), uint64(0xdeadbeef), uint8(30), true)
	f.Fuzz(func(t *testing.T, seed uint64, n uint8, total uint16, down uint64, surge uint8, percent bool) {
		r := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
		count := 1 + int(n)%64
		spec := randomWeighted(r, count, int32(total%20000))
		// Some targets get explicit replicas on top of the weighted total; target 0 keeps a
		// positive weight, so the rest always splits.
		spec.Targets[0].Weight = i32(1 + *spec.Targets[0].Weight)
		for i := 1; i < len(spec.Targets); i++ {
			if r.IntN(4) == 0 {
				v := int32(r.IntN(30))
				spec.Targets[i].Replicas = i32(v)
				*spec.Total += v
			}
		}
		deficits := Deficits{}
		for i, t := range spec.Targets {
			if down>>(i%64)&1 == 1 {
				deficits[t.Cluster] = int32(r.IntN(200)) - 20
			}
		}
		m := MaxSurge{Value: int32(surge), Percent: percent}
		if msg := checkFailover(spec, deficits, m); msg != "" {
			t.Fatalf("%s\nspec %+v deficits %v surge %s", msg, spec, deficits, m)
		}
	})
}

func BenchmarkFailover(b *testing.B) {
	for _, n := range []int{3, 50} {
		b.Run(fmt.Sprintf("targets=%d", n), func(b *testing.B) {
			spec := Spec{Key: "production/checkout", Strategy: MultiCloudWeighted, Total: i32(int32(30 * n))}
			for i := range n {
				spec.Targets = append(spec.Targets, Target{Cluster: fmt.Sprintf("c%02d", i), Weight: i32(int32(1 + i%5))})
			}
			// A third of the fleet is down: the largest split a view is likely to ask for.
			deficits := Deficits{}
			for i := 0; i < n; i += 3 {
				deficits[spec.Targets[i].Cluster] = 1 << 20
			}
			for b.Loop() {
				if _, err := FailoverFor(spec, spec.Targets[1].Cluster, deficits, DefaultMaxSurge); err != nil {
					b.Fatal(err)
				}
			}
			p, _ := PlanFailover(spec, deficits, DefaultMaxSurge)
			b.ReportMetric(float64(p.Absorbed), "extra-replicas")
			b.ReportMetric(float64(p.Deficit), "deficit-replicas")
		})
	}
}
