package status

import (
	"fmt"
	"io"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// BenchmarkMerge50 measures the merge and the table of a C = 50, W = 1,000 fleet's snapshots,
// without any reading: the CPU polykube-status spends after the lists arrived.
func BenchmarkMerge50(b *testing.B) {
	const c, w = 50, 1000
	names := make([]string, c)
	var roster []polykubev1alpha1.ClusterMember
	for i := range names {
		names[i] = fmt.Sprintf("member-%02d", i)
		cm := member(names[i], int32(i+1), false)
		cm.Spec.Mesh.PodCIDRs = []string{fmt.Sprintf("10.%d.0.0/16", i+1)}
		roster = append(roster, cm)
	}
	var specs []polykubev1alpha1.Workload
	for i := range w {
		wl := weighted(fmt.Sprintf("ns-%02d", i%10), fmt.Sprintf("svc-%04d", i), int32(100+i%50), names...)
		if i%2 == 1 {
			wl.Spec.Distribution.Targets = nil
			wl.Spec.Distribution.TargetSelectors = []polykubev1alpha1.TargetSelector{{
				LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: polykubev1alpha1.ClusterLabel, Operator: metav1.LabelSelectorOpExists}}},
				Weight:        ptr.To[int32](1),
			}}
		}
		specs = append(specs, wl)
	}
	snaps := make([]Snapshot, c)
	for i, n := range names {
		s := Snapshot{Context: "ctx-" + n, Federations: []polykubev1alpha1.Federation{federation("fleet", n, names...)}}
		for _, cm := range roster {
			cm.Status.Local = cm.Name == n
			s.ClusterMembers = append(s.ClusterMembers, cm)
		}
		for _, wl := range specs {
			st, err := fleettest.StatusFor(&wl, n, roster)
			if err != nil {
				b.Fatal(err)
			}
			wl.Status = st
			s.Workloads = append(s.Workloads, wl)
		}
		snaps[i] = s
	}
	b.ResetTimer()
	start := time.Now()
	for b.Loop() {
		r := Merge(snaps, Query{})
		if err := PrintReport(io.Discard, r, FormatTable, ViewWorkloads, PrintOptions{}); err != nil {
			b.Fatal(err)
		}
		if r.Summary.ExitCode != ExitOK {
			b.Fatalf("the synthetic fleet is not healthy: exit %d, %d disagreements", r.Summary.ExitCode, r.Summary.Disagreements)
		}
	}
	per := time.Since(start) / time.Duration(b.N)
	fmt.Printf("merge and table of %d snapshots × %d Workloads: %s per call\n", c, w, per.Round(time.Millisecond))
}
