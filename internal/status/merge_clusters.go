package status

import (
	"sort"
	"strings"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The clusters view: which cluster each context is, and whether it could be read.

// clusters resolves each context's cluster name and builds the cluster rows.
func (m *merger) clusters() {
	m.names = make([]string, len(m.snaps))
	for i, s := range m.snaps {
		name, source := resolveClusterName(s, m.objs[i].workloads)
		m.names[i] = name
		row := ClusterRow{
			Context: s.Context, Cluster: name, NameSource: source, Server: s.Server,
			Reachable: s.Err == nil, Reason: ReasonOK, Warnings: s.Warnings,
			Workloads: len(m.objs[i].workloads), Federations: len(s.Federations),
		}
		if s.Err != nil {
			row.Reason = s.Reason
			if row.Reason == "" {
				row.Reason = ReasonError
			}
			row.Message = s.Err.Error()
			a := s.Advice
			if a == "" {
				a = Advice(row.Reason)
			}
			if a != "" {
				row.Message += ": " + a
			}
		}
		m.report.Clusters = append(m.report.Clusters, row)
	}

	byName := map[string][]int{}
	for i := range m.snaps {
		if m.reachable(i) && m.report.Clusters[i].NameSource != NameFromContext {
			byName[m.names[i]] = append(byName[m.names[i]], i)
		}
	}
	for _, name := range sortedMapKeys(byName) {
		idx := byName[name]
		if len(idx) < 2 {
			continue
		}
		var ctxs []string
		for _, i := range idx {
			ctxs = append(ctxs, m.snaps[i].Context)
		}
		m.flag(DisagreeDuplicateCluster, "Cluster "+name, []string{name},
			"contexts %s all report the cluster name %q: they point at the same cluster, or two operators run with the same --cluster-name", strings.Join(ctxs, ", "), name)
	}
}

// ResolveClusterName returns the cluster name the snapshot's operator wrote
// (Federation status.localCluster, else the most common Workload status.cluster) and where it
// came from, or the context name when the operator wrote none.
func ResolveClusterName(s Snapshot) (name, source string) {
	objs := s.objs
	if objs == nil {
		objs = reducedOf(&s)
	}
	return resolveClusterName(s, objs.workloads)
}

func resolveClusterName(s Snapshot, workloads []workloadCopy) (name, source string) {
	if s.Err == nil {
		feds := append([]polykubev1alpha1.Federation(nil), s.Federations...)
		sort.Slice(feds, func(i, j int) bool { return feds[i].Name < feds[j].Name })
		for _, f := range feds {
			if f.Status.LocalCluster != "" {
				return f.Status.LocalCluster, NameFromFederation
			}
		}
		count := map[string]int{}
		for i := range workloads {
			if c := workloads[i].status.Cluster; c != "" {
				count[c]++
			}
		}
		best := ""
		for _, n := range sortedMapKeys(count) {
			if best == "" || count[n] > count[best] {
				best = n
			}
		}
		if best != "" {
			return best, NameFromWorkload
		}
	}
	return s.Context, NameFromContext
}
