package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The paths that keep a reconcile's cost from growing with the roster (issue 40) must give
// exactly what the plain ones give: the allocation and its digest are the upgrade contract.

// TestDivideEquallyMatchesTheHeap compares divide's split of equal, uncapped weights with the
// heap handing the seats out one at a time, over random rosters, keys and totals.
func TestDivideEquallyMatchesTheHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(40, 511))
	for i := range 3000 {
		n := 1 + rng.IntN(70)
		if i%100 == 0 {
			n = 511
		}
		weight := int64(1 + rng.IntN(5))
		if i%7 == 0 {
			weight = 1 << 31
		}
		parties := make([]party, n)
		for j := range parties {
			parties[j] = party{cluster: fmt.Sprintf("c-%d-%d", rng.IntN(1000), j), weight: weight, cap: uncapped}
		}
		key := fmt.Sprintf("ns-%d/app-%d", rng.IntN(10), i)
		seats := int64(rng.IntN(4 * n))
		if !equalUncapped(parties) {
			t.Fatalf("case %d: parties of equal weight %d and no cap not taken for the fast path", i, weight)
		}
		fast, handedFast := divide(key, parties, seats)
		slow, handedSlow := divideByHeap(key, parties, seats, make([]int64, n))
		if !slices.Equal(fast, slow) || handedFast != handedSlow {
			t.Fatalf("case %d (key %q, %d parties of weight %d, %d seats): fast %v (%d handed), heap %v (%d handed)",
				i, key, n, weight, seats, fast, handedFast, slow, handedSlow)
		}
	}
}

// TestEqualUncapped_OnlyTheEqualCase: a different weight, a zero weight or a cap takes the heap.
func TestEqualUncapped_OnlyTheEqualCase(t *testing.T) {
	for _, c := range []struct {
		name    string
		parties []party
		want    bool
	}{
		{"equal", []party{{"a", 2, uncapped}, {"b", 2, uncapped}}, true},
		{"none", nil, false},
		{"a weight differs", []party{{"a", 2, uncapped}, {"b", 3, uncapped}}, false},
		{"weight 0", []party{{"a", 0, uncapped}, {"b", 0, uncapped}}, false},
		{"capped", []party{{"a", 2, uncapped}, {"b", 2, 5}}, false},
	} {
		if got := equalUncapped(c.parties); got != c.want {
			t.Errorf("%s: equalUncapped = %v, want %v", c.name, got, c.want)
		}
	}
}

// TestAllocate_EqualWeightsAgainstTheHeap allocates specs whose targets share one weight (the
// fast path) and checks every share against the heap's split of the same targets.
func TestAllocate_EqualWeightsAgainstTheHeap(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 128))
	for i := range 500 {
		n := 1 + rng.IntN(130)
		spec := Spec{Key: fmt.Sprintf("fleet/app-%04d", i), Strategy: MultiCloudWeighted, Total: i32(int32(rng.IntN(3 * n)))}
		var parties []party
		for j := range n {
			name := fmt.Sprintf("member-%03d-abcdefghijklmnopqrstu", j)
			spec.Targets = append(spec.Targets, Target{Cluster: name, Weight: i32(1)})
			parties = append(parties, party{cluster: name, weight: 1, cap: uncapped})
		}
		rng.Shuffle(len(spec.Targets), func(a, b int) { spec.Targets[a], spec.Targets[b] = spec.Targets[b], spec.Targets[a] })
		alloc, err := Allocate(spec)
		if err != nil {
			t.Fatal(err)
		}
		heapSeats, _ := divideByHeap(spec.Key, parties, int64(*spec.Total), make([]int64, n))
		for j, p := range parties {
			if got, _ := alloc.For(p.cluster); int64(got) != heapSeats[j] {
				t.Fatalf("case %d: %s gets %d, the heap gives it %d", i, p.cluster, got, heapSeats[j])
			}
		}
	}
}

// TestMemberLabelsView: the in-place view ResolveTargets matches selectors against has the
// keys and values of MemberLabels, well-known keys winning over free-form ones.
func TestMemberLabelsView(t *testing.T) {
	members := []*polykubev1alpha1.ClusterMember{
		{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "beta"}, Spec: polykubev1alpha1.ClusterMemberSpec{
			Provider: "aws", Region: "eu-west-1", Zone: "eu-west-1a",
			Labels: map[string]string{"tier": "gold", polykubev1alpha1.ClusterLabel: "spoofed", polykubev1alpha1.RegionLabel: "spoofed"},
		}},
		{ObjectMeta: metav1.ObjectMeta{Name: "gamma"}, Spec: polykubev1alpha1.ClusterMemberSpec{
			Provider: "gcp",
			Labels:   map[string]string{polykubev1alpha1.RegionLabel: "free-form", polykubev1alpha1.ZoneLabel: "free-form", "empty": ""},
		}},
	}
	keys := []string{polykubev1alpha1.ClusterLabel, polykubev1alpha1.ProviderLabel, polykubev1alpha1.RegionLabel,
		polykubev1alpha1.ZoneLabel, "tier", "empty", "absent"}
	for _, m := range members {
		set, view := MemberLabels(m), memberLabels{m}
		for _, k := range keys {
			wantV, wantOK := set.Lookup(k)
			gotV, gotOK := view.Lookup(k)
			if gotV != wantV || gotOK != wantOK || view.Has(k) != set.Has(k) || view.Get(k) != set.Get(k) {
				t.Errorf("member %s, key %s: view (%q, %v), MemberLabels (%q, %v)", m.Name, k, gotV, gotOK, wantV, wantOK)
			}
		}
		for _, expr := range []string{"tier=gold", "tier!=gold", "!" + polykubev1alpha1.RegionLabel, polykubev1alpha1.ZoneLabel,
			polykubev1alpha1.RegionLabel + " in (eu-west-1, free-form)", polykubev1alpha1.ClusterLabel + "=spoofed", "empty", "!absent"} {
			s, err := labels.Parse(expr)
			if err != nil {
				t.Fatal(err)
			}
			if s.Matches(view) != s.Matches(set) {
				t.Errorf("member %s, selector %q: view %v, MemberLabels %v", m.Name, expr, s.Matches(view), s.Matches(set))
			}
		}
	}
}

// referenceDigest is AllocationDigest as decision 0013 wrote it first: a map of the last share
// of each cluster, its names sorted, one line each.
func referenceDigest(a Allocation) string {
	byCluster := make(map[string]int32, len(a))
	for _, s := range a {
		byCluster[s.Cluster] = s.Replicas
	}
	clusters := make([]string, 0, len(byCluster))
	for c := range byCluster {
		clusters = append(clusters, c)
	}
	slices.Sort(clusters)
	var b strings.Builder
	for _, c := range clusters {
		b.WriteString(c + "=" + strconv.FormatInt(int64(byCluster[c]), 10) + "\n")
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// TestAllocationDigest_MatchesTheReference: sorted (as Allocate returns it, hashed in place),
// shuffled or with a cluster listed twice, the digest is the reference's.
func TestAllocationDigest_MatchesTheReference(t *testing.T) {
	if got, want := AllocationDigest(Allocation{{"alpha", 2}, {"beta", 3}}), "1023397399cf418a"; got != want {
		// Pinned (printf 'alpha=2\nbeta=3\n' | sha256sum): a change here breaks every status an
		// operator wrote (decision 0013).
		t.Errorf("digest of alpha=2, beta=3: %s, want %s", got, want)
	}
	rng := rand.New(rand.NewPCG(13, 1))
	for i := range 500 {
		n := rng.IntN(40)
		a := make(Allocation, 0, n)
		for j := range n {
			a = append(a, Share{Cluster: fmt.Sprintf("c%02d", j*3+rng.IntN(3)), Replicas: int32(rng.IntN(9))})
		}
		switch i % 3 {
		case 1:
			rng.Shuffle(len(a), func(x, y int) { a[x], a[y] = a[y], a[x] })
		case 2:
			if n > 1 { // sorted, a cluster twice: the last share counts
				k := rng.IntN(n)
				a = slices.Insert(a, k+1, Share{Cluster: a[k].Cluster, Replicas: 42})
			}
		}
		if got, want := AllocationDigest(a), referenceDigest(a); got != want {
			t.Fatalf("case %d %v: digest %s, reference %s", i, a, got, want)
		}
	}
}
