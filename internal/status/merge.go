package status

import (
	"fmt"
	"sort"

	apiequality "k8s.io/apimachinery/pkg/api/equality"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Merge turns the snapshots of every context into one Report. It is pure: the same snapshots
// give the same Report, which the printers and the exit code are derived from.
func Merge(snaps []Snapshot, q Query) Report {
	if q.Timeout <= 0 {
		q.Timeout = DefaultTimeout
	}
	m := &merger{snaps: snaps, q: q, objs: make([]*reducedObjects, len(snaps))}
	for i := range snaps {
		if m.objs[i] = snaps[i].objs; m.objs[i] == nil {
			m.objs[i] = reducedOf(&snaps[i])
		}
	}
	m.report = Report{
		APIVersion:    APIVersion,
		Kind:          KindFleetStatus,
		Namespace:     q.Namespace,
		Filter:        q.Names,
		Timeout:       q.Timeout.String(),
		Clusters:      []ClusterRow{},
		Workloads:     []WorkloadRow{},
		Federations:   []FederationRow{},
		Members:       []MemberRow{},
		Disagreements: []Disagreement{},
	}
	m.clusters()
	m.versions()
	m.workloads()
	m.servicesAndBindings()
	m.federations()
	m.members()
	m.summarize()
	return m.report
}

type merger struct {
	snaps []Snapshot
	// objs are the Workloads and Deployments of each snapshot, in compact form.
	objs   []*reducedObjects
	q      Query
	names  []string // resolved cluster name per snapshot
	report Report
	// notReady collects the Summary's NotReady entries.
	notReady []string
	// rosterAffected names the Workloads (namespace/name) whose copies resolve different
	// targets because the clusters' rosters differ.
	rosterAffected []string
	// templates holds the effective templates of the Workload whose row is being built (render).
	templates map[renderKey]renderedTemplate
	// rosterGroups maps each snapshot to the first one holding an equal roster (rosterGroup).
	rosterGroups []int
}

// rosterGroup is the index of the first snapshot whose roster equals snapshot i's: the same
// ClusterMember names and specs in the same order, which is all placement reads of a roster.
func (m *merger) rosterGroup(i int) int {
	if m.rosterGroups == nil {
		m.rosterGroups = make([]int, len(m.snaps))
		for a := range m.snaps {
			m.rosterGroups[a] = a
			for b := range a {
				if m.rosterGroups[b] == b && sameRoster(m.snaps[a].ClusterMembers, m.snaps[b].ClusterMembers) {
					m.rosterGroups[a] = b
					break
				}
			}
		}
	}
	return m.rosterGroups[i]
}

func sameRoster(a, b []polykubev1alpha1.ClusterMember) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || !apiequality.Semantic.DeepEqual(a[i].Spec, b[i].Spec) {
			return false
		}
	}
	return true
}

func (m *merger) reachable(i int) bool { return m.snaps[i].Err == nil }

func (m *merger) flag(kind, object string, clusters []string, format string, args ...any) {
	m.report.Disagreements = append(m.report.Disagreements, Disagreement{
		Kind: kind, Object: object, Clusters: uniqueSorted(clusters), Message: fmt.Sprintf(format, args...),
	})
}

func (m *merger) summarize() {
	s := Summary{ClustersQueried: len(m.snaps), Disagreements: len(m.report.Disagreements)}
	for i, snap := range m.snaps {
		if m.reachable(i) {
			s.ClustersReachable++
		}
		if !m.reachable(i) || len(snap.Warnings) > 0 {
			s.Unreachable = append(s.Unreachable, snap.Context)
		}
	}
	s.NotReady = m.notReady
	s.Failing = m.sortFailures()
	switch {
	case len(s.Unreachable) > 0:
		s.ExitCode = ExitUnreachable
	case len(s.Failing) > 0:
		s.ExitCode = ExitFailing
	case s.Disagreements > 0:
		s.ExitCode = ExitDisagreement
	case len(s.NotReady) > 0:
		s.ExitCode = ExitNotReady
	default:
		s.ExitCode = ExitOK
	}
	s.Healthy = s.ExitCode == ExitOK
	m.report.Summary = s
}

func (m *merger) namesOf(idx []int) []string {
	out := make([]string, 0, len(idx))
	for _, i := range idx {
		out = append(out, m.names[i])
	}
	return out
}

// groupBy partitions idx into groups of equal elements, keeping first-seen order.
func groupBy(idx []int, equal func(a, b int) bool) [][]int {
	var groups [][]int
	for _, i := range idx {
		placed := false
		for g := range groups {
			if equal(groups[g][0], i) {
				groups[g] = append(groups[g], i)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, []int{i})
		}
	}
	return groups
}

func uniqueSorted(s []string) []string {
	seen := map[string]bool{}
	out := []string{}
	for _, v := range s {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	sort.Strings(out)
	return out
}

func sortedMapKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
