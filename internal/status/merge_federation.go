package status

import (
	"fmt"
	"sort"
	"strings"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The federation and members views: the rosters every cluster holds, compared.

// federations builds one row per Federation and compares the rosters.
func (m *merger) federations() {
	copies := map[string][]*polykubev1alpha1.Federation{}
	for i, s := range m.snaps {
		if !m.reachable(i) {
			continue
		}
		for j := range s.Federations {
			f := &s.Federations[j]
			if copies[f.Name] == nil {
				copies[f.Name] = make([]*polykubev1alpha1.Federation, len(m.snaps))
			}
			copies[f.Name][i] = f
		}
	}
	for _, name := range sortedMapKeys(copies) {
		object := "Federation " + name
		row := FederationRow{Name: name}
		var present, absent []int
		for i := range m.snaps {
			c := FederationCopy{Context: m.snaps[i].Context, Cluster: m.names[i], State: StateUnknown}
			f := copies[name][i]
			switch {
			case f != nil:
				present = append(present, i)
				c.State = StatePresent
				c.Members = append([]string(nil), f.Spec.Members...)
				sort.Strings(c.Members)
				c.LocalCluster = f.Status.LocalCluster
				c.Checks = checks(f.Status.Conditions)
				if r := findCondition(f.Status.Conditions, polykubev1alpha1.ReadyCondition); r != nil {
					c.Ready = string(r.Status)
					if r.Status != metav1.ConditionTrue {
						m.notReady = append(m.notReady, fmt.Sprintf("%s in %s: Ready=%s (%s: %s)", object, m.names[i], r.Status, r.Reason, r.Message))
					}
				} else {
					m.notReady = append(m.notReady, fmt.Sprintf("%s in %s: no Ready condition yet (is the operator running?)", object, m.names[i]))
				}
			case m.reachable(i):
				absent = append(absent, i)
				c.State = StateAbsent
			}
			row.Copies = append(row.Copies, c)
		}
		if len(absent) > 0 {
			m.flag(DisagreeMissingCopy, object, m.namesOf(absent), "present in %s but absent from %s: check that Flux delivered the roster to every cluster",
				strings.Join(m.namesOf(present), ", "), strings.Join(m.namesOf(absent), ", "))
		}
		groups := groupBy(present, func(a, b int) bool {
			return strings.Join(row.Copies[a].Members, ",") == strings.Join(row.Copies[b].Members, ",")
		})
		if len(groups) > 1 {
			var parts []string
			for _, g := range groups {
				parts = append(parts, fmt.Sprintf("%s: [%s]", strings.Join(m.namesOf(g), ", "), strings.Join(row.Copies[g[0]].Members, ", ")))
			}
			m.flag(DisagreeRoster, object, m.namesOf(present), "the rosters differ: %s%s", strings.Join(parts, "; "), m.affectedWorkloads())
		}
		m.report.Federations = append(m.report.Federations, row)
	}
}

// members builds the roster view from the ClusterMembers every cluster holds.
func (m *merger) members() {
	copies := map[string][]*polykubev1alpha1.ClusterMember{}
	for i, s := range m.snaps {
		if !m.reachable(i) {
			continue
		}
		for j := range s.ClusterMembers {
			cm := &s.ClusterMembers[j]
			if copies[cm.Name] == nil {
				copies[cm.Name] = make([]*polykubev1alpha1.ClusterMember, len(m.snaps))
			}
			copies[cm.Name][i] = cm
		}
	}
	rosters := map[string][]string{}
	for _, f := range m.report.Federations {
		for _, c := range f.Copies {
			for _, member := range c.Members {
				rosters[member] = append(rosters[member], f.Name)
			}
		}
	}
	for _, name := range sortedMapKeys(copies) {
		row := MemberRow{Name: name, InRoster: uniqueSorted(rosters[name]), SeenBy: []string{}}
		var present, absent []int
		for i := range m.snaps {
			cm := copies[name][i]
			if cm == nil {
				if m.reachable(i) {
					absent = append(absent, i)
				}
				continue
			}
			present = append(present, i)
			row.SeenBy = append(row.SeenBy, m.names[i])
			if row.Provider == "" {
				row.Provider, row.Region, row.ClusterID = cm.Spec.Provider, cm.Spec.Region, cm.Spec.Mesh.ClusterID
			}
			if cm.Status.Local || m.names[i] == name && m.report.Clusters[i].NameSource != NameFromContext {
				row.LocalContext = m.snaps[i].Context
			}
		}
		object := "ClusterMember " + name
		if len(absent) > 0 {
			m.flag(DisagreeMissingCopy, object, m.namesOf(absent), "present in %s but absent from %s: check that Flux delivered the roster to every cluster%s",
				strings.Join(m.namesOf(present), ", "), strings.Join(m.namesOf(absent), ", "), m.affectedWorkloads())
		}
		groups := groupBy(present, func(a, b int) bool {
			return apiequality.Semantic.DeepEqual(copies[name][a].Spec, copies[name][b].Spec)
		})
		if len(groups) > 1 {
			var parts []string
			for _, g := range groups {
				s := copies[name][g[0]].Spec
				parts = append(parts, fmt.Sprintf("%s see clusterID %d, podCIDRs %s, provider %s", strings.Join(m.namesOf(g), ", "), s.Mesh.ClusterID, strings.Join(s.Mesh.PodCIDRs, ","), s.Provider))
			}
			m.flag(DisagreeMember, object, m.namesOf(present), "the copies differ: %s%s", strings.Join(parts, "; "), m.affectedWorkloads())
		}
		m.report.Members = append(m.report.Members, row)
	}
}

// affectedWorkloads is the suffix of a roster finding that names the Workloads whose targets
// differ between clusters because of it (targetSelectors over rosters that differ), or "".
func (m *merger) affectedWorkloads() string {
	if len(m.rosterAffected) == 0 {
		return ""
	}
	return "; Workloads whose targets differ because of it: " + strings.Join(uniqueSorted(m.rosterAffected), ", ")
}

func checks(conds []metav1.Condition) []Check {
	out := make([]Check, 0, len(conds))
	for _, c := range conds {
		out = append(out, Check{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Type < out[j].Type })
	return out
}

func findCondition(conds []metav1.Condition, t string) *metav1.Condition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}
