package plan

import (
	"fmt"
	"slices"
	"strings"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// PlannedFailover is a Workload's replicas as if the --assume-down clusters ran none of their
// share: with spec.distribution.failover the survivors absorb it (placement.PlanFailover, each
// capped by maxSurge); without it the share is lost.
type PlannedFailover struct {
	// Enabled is whether the Workload opts into failover (spec.distribution.failover).
	Enabled bool `json:"enabled"`
	// MaxSurge is the cap on each survivor's extra (with Enabled).
	MaxSurge string `json:"maxSurge,omitempty"`
	// Shares has one entry per target, sorted by cluster.
	Shares []FailoverShare `json:"shares"`
	// Deficit is the summed share of the targets assumed down; Absorbed is what the survivors'
	// extra covers of it, and Uncovered the rest (what the caps, or no failover, leave).
	Deficit   int64 `json:"deficit"`
	Absorbed  int64 `json:"absorbed"`
	Uncovered int64 `json:"uncovered"`
}

// FailoverShare is one target's replicas under the preview.
type FailoverShare struct {
	Cluster string `json:"cluster"`
	// Base is the cluster's share of the allocation.
	Base int32 `json:"base"`
	// Down is true for a target assumed down; it then runs 0.
	Down bool `json:"down,omitempty"`
	// Extra is what a survivor runs for the clusters down; Replicas is what it runs in all.
	Extra    int32 `json:"extra,omitempty"`
	Replicas int32 `json:"replicas"`
}

// For returns the share of cluster and whether it is a target of the preview (false on nil).
func (p *PlannedFailover) For(cluster string) (FailoverShare, bool) {
	if p == nil {
		return FailoverShare{}, false
	}
	for _, s := range p.Shares {
		if s.Cluster == cluster {
			return s, true
		}
	}
	return FailoverShare{}, false
}

// planFailover previews w's replicas with the clusters in down assumed down, the deficit of each
// being its full share. It returns nil when w targets none of them: nothing changes.
func planFailover(w *polykubev1alpha1.Workload, roster []polykubev1alpha1.ClusterMember, down []string) (*PlannedFailover, error) {
	spec, err := placement.SpecFromWorkloadIn(w, roster)
	if err != nil {
		return nil, err
	}
	alloc, err := placement.Allocate(spec)
	if err != nil {
		return nil, err
	}
	deficits := placement.Deficits{}
	for _, c := range down {
		if r, ok := alloc.For(c); ok {
			deficits[c] = r
		}
	}
	if len(deficits) == 0 {
		return nil, nil
	}
	cfg, enabled, err := placement.FailoverFromWorkload(w)
	if err != nil {
		return nil, err
	}
	surge := placement.SurgeReplicas(0) // without failover nobody absorbs anything
	if enabled {
		surge = cfg.MaxSurge
	}
	fp, err := placement.PlanFailover(spec, deficits, surge)
	if err != nil {
		return nil, err
	}
	out := &PlannedFailover{Enabled: enabled, Deficit: fp.Deficit, Absorbed: fp.Absorbed, Uncovered: fp.Deficit - fp.Absorbed}
	if enabled {
		out.MaxSurge = cfg.MaxSurge.String()
	}
	for _, s := range fp.Shares {
		fs := FailoverShare{Cluster: s.Cluster, Base: s.Base, Extra: s.Extra, Replicas: s.Replicas()}
		if _, isDown := deficits[s.Cluster]; isDown {
			fs.Down, fs.Replicas = true, 0
		}
		out.Shares = append(out.Shares, fs)
	}
	return out, nil
}

// failoverSummary is the table's FAILOVER cell of a preview.
func failoverSummary(f *PlannedFailover) string {
	if f == nil {
		return "-"
	}
	if !f.Enabled {
		return fmt.Sprintf("no failover: %d lost", f.Deficit)
	}
	s := fmt.Sprintf("absorbs %d of %d (maxSurge %s)", f.Absorbed, f.Deficit, f.MaxSurge)
	if f.Uncovered > 0 {
		s += fmt.Sprintf(", %d uncovered", f.Uncovered)
	}
	return s
}

// failoverCell is a cluster's cell under the preview: "down", "base+extra" or the base.
func failoverCell(f *PlannedFailover, cluster string) (string, bool) {
	s, ok := f.For(cluster)
	switch {
	case !ok:
		return "", false
	case s.Down:
		return "down", true
	case s.Extra > 0:
		return fmt.Sprintf("%d+%d", s.Base, s.Extra), true
	}
	return fmt.Sprint(s.Base), true
}

// checkAssumeDown refuses names that are neither a target of a Workload read nor in the roster
// (a typo would preview nothing), and a --cluster that is assumed down.
func checkAssumeDown(down []string, cluster string, known map[string]bool) error {
	if slices.Contains(down, cluster) && cluster != "" {
		return fmt.Errorf("--cluster %s is also --assume-down: preview a survivor's view, or drop --cluster to see every cluster", cluster)
	}
	var unknown []string
	for _, c := range down {
		if !known[c] {
			unknown = append(unknown, c)
		}
	}
	if len(unknown) > 0 {
		return fmt.Errorf("--assume-down %s: no Workload read targets it and no ClusterMember read has that name; the clusters known are %s",
			strings.Join(unknown, ", "), strings.Join(sortedMapKeys(known), ", "))
	}
	return nil
}
