package placement

import (
	"errors"
	"fmt"
	"math/rand"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func roster(members ...*polykubev1alpha1.ClusterMember) []polykubev1alpha1.ClusterMember {
	out := make([]polykubev1alpha1.ClusterMember, 0, len(members))
	for _, m := range members {
		out = append(out, *m)
	}
	return out
}

func rule(ml map[string]string, replicas, weight *int32) polykubev1alpha1.TargetSelector {
	return polykubev1alpha1.TargetSelector{LabelSelector: metav1.LabelSelector{MatchLabels: ml}, Replicas: replicas, Weight: weight}
}

func explicit(cluster string, replicas, weight *int32) polykubev1alpha1.DistributionTarget {
	return polykubev1alpha1.DistributionTarget{ClusterRef: cluster, Replicas: replicas, Weight: weight}
}

// formatTargets renders targets as "a=r1 b=w2" (r: replicas, w: weight) for readable tables.
func formatTargets(ts []Target) string {
	parts := make([]string, 0, len(ts))
	for _, t := range ts {
		switch {
		case t.Replicas != nil:
			parts = append(parts, fmt.Sprintf("%s=r%d", t.Cluster, *t.Replicas))
		case t.Weight != nil:
			parts = append(parts, fmt.Sprintf("%s=w%d", t.Cluster, *t.Weight))
		default:
			parts = append(parts, t.Cluster+"=-")
		}
	}
	return strings.Join(parts, " ")
}

var testRoster = roster(
	member("aws-eu", "aws", "eu", "eu-a", map[string]string{"tier": "gold"}),
	member("gcp-eu", "gcp", "eu", "", nil),
	member("gcp-us", "gcp", "us", "", map[string]string{"tier": "gold"}),
	member("onprem-fra", "onprem", "eu", "", map[string]string{"polykube.kismet.io/region": "us"}),
)

func TestResolveTargets(t *testing.T) {
	eu := map[string]string{polykubev1alpha1.RegionLabel: "eu"}
	tests := []struct {
		name   string
		d      polykubev1alpha1.Distribution
		roster []polykubev1alpha1.ClusterMember
		want   string
	}{
		{
			name:   "explicit targets only, roster ignored, sorted",
			d:      polykubev1alpha1.Distribution{Strategy: Static, Targets: []polykubev1alpha1.DistributionTarget{explicit("b", i32(1), nil), explicit("a", i32(2), nil)}},
			roster: testRoster,
			want:   "a=r2 b=r1",
		},
		{
			name:   "a region selects every member in it, the well-known key winning over a free-form label",
			d:      polykubev1alpha1.Distribution{Strategy: MultiCloudWeighted, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(eu, nil, i32(2))}},
			roster: testRoster,
			want:   "aws-eu=w2 gcp-eu=w2 onprem-fra=w2",
		},
		{
			name: "an explicit target wins over a rule for the cluster it names",
			d: polykubev1alpha1.Distribution{Strategy: MultiCloudWeighted,
				Targets:         []polykubev1alpha1.DistributionTarget{explicit("gcp-eu", i32(5), nil)},
				TargetSelectors: []polykubev1alpha1.TargetSelector{rule(eu, nil, i32(2))}},
			roster: testRoster,
			want:   "aws-eu=w2 gcp-eu=r5 onprem-fra=w2",
		},
		{
			name: "a cluster two rules match takes the first",
			d: polykubev1alpha1.Distribution{Strategy: MultiCloudWeighted, TargetSelectors: []polykubev1alpha1.TargetSelector{
				rule(map[string]string{"tier": "gold"}, i32(3), nil), rule(eu, nil, i32(1)),
			}},
			roster: testRoster,
			want:   "aws-eu=r3 gcp-eu=w1 gcp-us=r3 onprem-fra=w1",
		},
		{
			name: "match expressions over provider and cluster name",
			d: polykubev1alpha1.Distribution{Strategy: Static, TargetSelectors: []polykubev1alpha1.TargetSelector{{
				LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{
					{Key: polykubev1alpha1.ProviderLabel, Operator: metav1.LabelSelectorOpIn, Values: []string{"gcp"}},
					{Key: polykubev1alpha1.ClusterLabel, Operator: metav1.LabelSelectorOpNotIn, Values: []string{"gcp-us"}},
				}},
				Replicas: i32(1),
			}}},
			roster: testRoster,
			want:   "gcp-eu=r1",
		},
		{
			name:   "an explicit target need not be in the roster; a rule matching nothing adds nothing",
			d:      polykubev1alpha1.Distribution{Strategy: Static, Targets: []polykubev1alpha1.DistributionTarget{explicit("elsewhere", i32(1), nil)}, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(map[string]string{"tier": "none"}, i32(1), nil)}},
			roster: testRoster,
			want:   "elsewhere=r1",
		},
		{
			name: "a member being deleted is not part of the roster",
			d:    polykubev1alpha1.Distribution{Strategy: Static, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(eu, i32(1), nil)}},
			roster: func() []polykubev1alpha1.ClusterMember {
				r := roster(member("aws-eu", "aws", "eu", "", nil), member("gcp-eu", "gcp", "eu", "", nil))
				now := metav1.Now()
				r[1].DeletionTimestamp = &now
				return r
			}(),
			want: "aws-eu=r1",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveTargets(tt.d, tt.roster)
			if err != nil {
				t.Fatalf("ResolveTargets: %v", err)
			}
			if s := formatTargets(got); s != tt.want {
				t.Errorf("got %q, want %q", s, tt.want)
			}
		})
	}
}

func TestResolveTargets_Errors(t *testing.T) {
	eu := map[string]string{polykubev1alpha1.RegionLabel: "eu"}
	tests := []struct {
		name   string
		d      polykubev1alpha1.Distribution
		roster []polykubev1alpha1.ClusterMember
		is     error
		msg    string
	}{
		{"neither targets nor rules", polykubev1alpha1.Distribution{Strategy: Static}, testRoster, ErrInvalid, "set targets, targetSelectors or both"},
		{"empty selector", polykubev1alpha1.Distribution{Strategy: Static, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(nil, i32(1), nil)}}, testRoster, ErrInvalid, "targetSelectors[0]: labelSelector must not be empty"},
		{"both replicas and weight", polykubev1alpha1.Distribution{Strategy: MultiCloudWeighted, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(eu, i32(1), i32(1))}}, testRoster, ErrInvalid, "set exactly one of replicas or weight"},
		{"neither replicas nor weight", polykubev1alpha1.Distribution{Strategy: MultiCloudWeighted, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(eu, nil, nil)}}, testRoster, ErrInvalid, "set exactly one of replicas or weight"},
		{"weight with Static", polykubev1alpha1.Distribution{Strategy: Static, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(eu, i32(1), nil), rule(eu, nil, i32(1))}}, testRoster, ErrInvalid, "targetSelectors[1]: strategy Static needs replicas"},
		{"bad selector", polykubev1alpha1.Distribution{Strategy: Static, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(map[string]string{"bad key": "x"}, i32(1), nil)}}, testRoster, ErrInvalid, "targetSelectors[0]: labelSelector"},
		// A spec error is reported even when the roster is empty, as in every other cluster.
		{"spec error before roster", polykubev1alpha1.Distribution{Strategy: Static, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(eu, nil, i32(1))}}, nil, ErrInvalid, "strategy Static needs replicas"},
		{"nothing selected", polykubev1alpha1.Distribution{Strategy: Static, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(map[string]string{"tier": "none"}, i32(1), nil)}}, testRoster, ErrNoTargets, "no ClusterMember of the roster (4) matches"},
		{"empty roster", polykubev1alpha1.Distribution{Strategy: Static, TargetSelectors: []polykubev1alpha1.TargetSelector{rule(eu, i32(1), nil)}}, nil, ErrNoTargets, "no ClusterMember"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ResolveTargets(tt.d, tt.roster)
			if !errors.Is(err, tt.is) {
				t.Fatalf("err = %v, want one wrapping %v", err, tt.is)
			}
			if !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("err = %q, want it to contain %q", err, tt.msg)
			}
		})
	}
}

func TestForWorkloadIn_AllocatesTheResolvedTargets(t *testing.T) {
	w := &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec: polykubev1alpha1.WorkloadSpec{Distribution: polykubev1alpha1.Distribution{
			Strategy: MultiCloudWeighted, Replicas: i32(7),
			Targets:         []polykubev1alpha1.DistributionTarget{explicit("gcp-us", i32(1), nil)},
			TargetSelectors: []polykubev1alpha1.TargetSelector{rule(map[string]string{polykubev1alpha1.RegionLabel: "eu"}, nil, i32(1))},
		}},
	}
	alloc, err := ForWorkloadIn(w, testRoster)
	if err != nil {
		t.Fatal(err)
	}
	if alloc.Total() != 7 || len(alloc) != 4 {
		t.Fatalf("allocation %v: want 4 targets and 7 replicas", alloc)
	}
	if r, _ := alloc.For("gcp-us"); r != 1 {
		t.Errorf("gcp-us got %d, want its explicit 1", r)
	}
	for _, c := range []string{"aws-eu", "gcp-eu", "onprem-fra"} {
		if r, _ := alloc.For(c); r != 2 {
			t.Errorf("%s got %d, want 2 (6 split over three equal weights)", c, r)
		}
	}
}

// FuzzResolveTargets builds a roster and rules from the fuzzer's bytes and checks that
// ResolveTargets is deterministic, that the order of the roster does not matter, that explicit
// targets win and are kept as given, that every other target comes from the first rule that
// matches it, and that the result is sorted and free of duplicates.
func FuzzResolveTargets(f *testing.F) {
	f.Add(int64(1), uint8(5), uint8(2), uint8(1))
	f.Add(int64(42), uint8(30), uint8(4), uint8(3))
	f.Add(int64(-7), uint8(0), uint8(1), uint8(0))
	f.Fuzz(func(t *testing.T, seed int64, nMembers, nRules, nExplicit uint8) {
		r := rand.New(rand.NewSource(seed))
		regions := []string{"eu", "us", "ap", ""}
		providers := []string{"aws", "gcp", "onprem"}
		tiers := []string{"gold", "silver", ""}
		var members []polykubev1alpha1.ClusterMember
		for i := range int(nMembers % 40) {
			l := map[string]string{}
			if tier := tiers[r.Intn(len(tiers))]; tier != "" {
				l["tier"] = tier
			}
			members = append(members, *member(fmt.Sprintf("c%02d", i), providers[r.Intn(len(providers))], regions[r.Intn(len(regions))], "", l))
		}
		d := polykubev1alpha1.Distribution{Strategy: MultiCloudWeighted}
		for range int(nRules % 6) {
			var ml map[string]string
			switch r.Intn(3) {
			case 0:
				ml = map[string]string{polykubev1alpha1.RegionLabel: regions[r.Intn(3)]}
			case 1:
				ml = map[string]string{polykubev1alpha1.ProviderLabel: providers[r.Intn(len(providers))]}
			default:
				ml = map[string]string{"tier": tiers[r.Intn(2)]}
			}
			if r.Intn(2) == 0 {
				d.TargetSelectors = append(d.TargetSelectors, rule(ml, i32(int32(r.Intn(5))), nil))
			} else {
				d.TargetSelectors = append(d.TargetSelectors, rule(ml, nil, i32(int32(r.Intn(5)))))
			}
		}
		for i := range int(nExplicit % 5) {
			d.Targets = append(d.Targets, explicit(fmt.Sprintf("c%02d", i*3), i32(int32(100+i)), nil))
		}
		before := d.DeepCopy()

		got, err := ResolveTargets(d, members)
		if !reflect.DeepEqual(&d, before) {
			t.Fatal("ResolveTargets modified the distribution")
		}
		shuffled := append([]polykubev1alpha1.ClusterMember(nil), members...)
		r.Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		got2, err2 := ResolveTargets(d, shuffled)
		if (err == nil) != (err2 == nil) || formatTargets(got) != formatTargets(got2) {
			t.Fatalf("the order of the roster matters: %q (%v) vs %q (%v)", formatTargets(got), err, formatTargets(got2), err2)
		}
		if err != nil {
			if len(d.Targets) > 0 || !errors.Is(err, ErrNoTargets) && !errors.Is(err, ErrInvalid) {
				t.Fatalf("unexpected error %v", err)
			}
			return
		}
		byName := map[string]Target{}
		for i, tg := range got {
			if i > 0 && got[i-1].Cluster >= tg.Cluster {
				t.Fatalf("not sorted or duplicated: %q", formatTargets(got))
			}
			byName[tg.Cluster] = tg
		}
		for _, e := range d.Targets {
			tg, ok := byName[e.ClusterRef]
			if !ok || tg.Replicas == nil || *tg.Replicas != *e.Replicas || tg.Weight != nil {
				t.Fatalf("explicit target %s not kept as given: %q", e.ClusterRef, formatTargets(got))
			}
		}
		for i := range members {
			m := &members[i]
			if _, isExplicit := byName[m.Name]; isExplicit && hasExplicit(d, m.Name) {
				continue
			}
			var first *polykubev1alpha1.TargetSelector
			for k := range d.TargetSelectors {
				if matchesLabels(d.TargetSelectors[k].LabelSelector.MatchLabels, MemberLabels(m)) {
					first = &d.TargetSelectors[k]
					break
				}
			}
			tg, ok := byName[m.Name]
			if (first != nil) != ok {
				t.Fatalf("member %s: selected=%v but resolved=%v (%q)", m.Name, first != nil, ok, formatTargets(got))
			}
			if ok && (!reflect.DeepEqual(tg.Replicas, first.Replicas) || !reflect.DeepEqual(tg.Weight, first.Weight)) {
				t.Fatalf("member %s did not take the first matching rule: %q", m.Name, formatTargets(got))
			}
		}
	})
}

func hasExplicit(d polykubev1alpha1.Distribution, cluster string) bool {
	for _, t := range d.Targets {
		if t.ClusterRef == cluster {
			return true
		}
	}
	return false
}

// matchesLabels is an independent reading of matchLabels: every pair present.
func matchesLabels(want, have map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}
