package status

import (
	"fmt"
	"path"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// Merge turns the snapshots of every context into one Report. It is pure: the same snapshots
// give the same Report, which the printers and the exit code are derived from.
func Merge(snaps []Snapshot, q Query) Report {
	if q.Timeout <= 0 {
		q.Timeout = DefaultTimeout
	}
	m := &merger{snaps: snaps, q: q}
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
	m.workloads()
	m.federations()
	m.members()
	m.summarize()
	return m.report
}

type merger struct {
	snaps  []Snapshot
	q      Query
	names  []string // resolved cluster name per snapshot
	report Report
	// notReady collects the Summary's NotReady entries.
	notReady []string
}

func (m *merger) reachable(i int) bool { return m.snaps[i].Err == nil }

func (m *merger) flag(kind, object string, clusters []string, format string, args ...any) {
	m.report.Disagreements = append(m.report.Disagreements, Disagreement{
		Kind: kind, Object: object, Clusters: uniqueSorted(clusters), Message: fmt.Sprintf(format, args...),
	})
}

// clusters resolves each context's cluster name and builds the cluster rows.
func (m *merger) clusters() {
	m.names = make([]string, len(m.snaps))
	for i, s := range m.snaps {
		name, source := ResolveClusterName(s)
		m.names[i] = name
		row := ClusterRow{
			Context: s.Context, Cluster: name, NameSource: source, Server: s.Server,
			Reachable: s.Err == nil, Reason: ReasonOK, Warnings: s.Warnings,
			Workloads: len(s.Workloads), Federations: len(s.Federations),
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
	if s.Err == nil {
		feds := append([]polykubev1alpha1.Federation(nil), s.Federations...)
		sort.Slice(feds, func(i, j int) bool { return feds[i].Name < feds[j].Name })
		for _, f := range feds {
			if f.Status.LocalCluster != "" {
				return f.Status.LocalCluster, NameFromFederation
			}
		}
		count := map[string]int{}
		for _, w := range s.Workloads {
			if w.Status.Cluster != "" {
				count[w.Status.Cluster]++
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

func (m *merger) matches(name string) bool {
	if len(m.q.Names) == 0 {
		return true
	}
	for _, p := range m.q.Names {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

type wlKey struct{ ns, name string }

func (k wlKey) String() string { return k.ns + "/" + k.name }

// workloads builds one row per Workload and checks the copies against each other.
func (m *merger) workloads() {
	copies := map[wlKey][]*polykubev1alpha1.Workload{}
	deps := map[wlKey][]*appsv1.Deployment{}
	for i, s := range m.snaps {
		if !m.reachable(i) {
			continue
		}
		for j := range s.Workloads {
			w := &s.Workloads[j]
			if !m.matches(w.Name) || m.q.Namespace != "" && w.Namespace != m.q.Namespace {
				continue
			}
			k := wlKey{w.Namespace, w.Name}
			if copies[k] == nil {
				copies[k] = make([]*polykubev1alpha1.Workload, len(m.snaps))
			}
			copies[k][i] = w
		}
		for j := range s.Deployments {
			d := &s.Deployments[j]
			name := d.Labels[polykubev1alpha1.WorkloadNameLabel]
			if name == "" || !m.matches(name) || m.q.Namespace != "" && d.Namespace != m.q.Namespace {
				continue
			}
			k := wlKey{d.Namespace, name}
			if deps[k] == nil {
				deps[k] = make([]*appsv1.Deployment, len(m.snaps))
			}
			deps[k][i] = d
			if copies[k] == nil {
				copies[k] = make([]*polykubev1alpha1.Workload, len(m.snaps))
			}
		}
	}

	keys := make([]wlKey, 0, len(copies))
	for k := range copies {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].ns != keys[j].ns {
			return keys[i].ns < keys[j].ns
		}
		return keys[i].name < keys[j].name
	})
	for _, k := range keys {
		m.report.Workloads = append(m.report.Workloads, m.workload(k, copies[k], deps[k]))
	}

	for _, p := range m.q.Names {
		found := false
		for _, k := range keys {
			if ok, _ := path.Match(p, k.name); ok {
				found = true
				break
			}
		}
		if !found {
			m.notReady = append(m.notReady, fmt.Sprintf("no Workload matches %q in any reachable cluster", p))
		}
	}
}

func (m *merger) workload(k wlKey, copies []*polykubev1alpha1.Workload, deps []*appsv1.Deployment) WorkloadRow {
	object := "Workload " + k.String()
	row := WorkloadRow{Namespace: k.ns, Name: k.name}
	var present, absent []int
	expectedBy := make([]placement.Allocation, len(m.snaps))

	for i := range m.snaps {
		cell := WorkloadInCluster{Context: m.snaps[i].Context, Cluster: m.names[i], State: StateUnknown}
		if m.reachable(i) {
			cell.State = StateAbsent
		}
		if deps != nil && deps[i] != nil {
			r := int32(1)
			if deps[i].Spec.Replicas != nil {
				r = *deps[i].Spec.Replicas
			}
			cell.DeploymentReplicas = &r
		}
		w := copies[i]
		if w == nil {
			if m.reachable(i) {
				absent = append(absent, i)
			}
			row.Clusters = append(row.Clusters, cell)
			continue
		}
		present = append(present, i)
		cell.State = StatePresent
		cell.Generation = w.Generation
		cell.ObservedGeneration = w.Status.ObservedGeneration
		cell.SpecHash = w.Status.SpecHash
		cell.ReportedCluster = w.Status.Cluster
		cell.Desired = w.Status.DesiredReplicas
		cell.Ready = w.Status.ReadyReplicas
		cell.Phase = w.Status.Phase
		cell.Targeted = targets(w, m.names[i])
		for _, t := range w.Status.Targets {
			cell.Targets = append(cell.Targets, Share{Cluster: t.Cluster, Replicas: t.DesiredReplicas})
		}
		sortShares(cell.Targets)
		if alloc, err := placement.ForWorkload(w); err != nil {
			m.flag(DisagreeInvalidSpec, object, []string{m.names[i]},
				"the copy in %s cannot be allocated: %v; fix the manifest in Git", m.names[i], err)
		} else {
			expectedBy[i] = alloc
			cell.Expected = shares(alloc)
		}
		row.Clusters = append(row.Clusters, cell)
		row.DesiredTotal += cell.Desired
		row.ReadyTotal += cell.Ready
	}

	// Copies missing from reachable clusters.
	if len(present) > 0 && len(absent) > 0 {
		m.flag(DisagreeMissingCopy, object, m.namesOf(absent),
			"present in %s but absent from %s: check that Flux delivered the manifests to every cluster",
			strings.Join(m.namesOf(present), ", "), strings.Join(m.namesOf(absent), ", "))
	}

	// Specs, and the spec hashes the operators computed.
	groups := groupBy(present, func(a, b int) bool { return apiequality.Semantic.DeepEqual(copies[a].Spec, copies[b].Spec) })
	if len(groups) > 1 {
		var parts []string
		for _, g := range groups {
			var who []string
			for _, i := range g {
				who = append(who, fmt.Sprintf("%s (generation %d, specHash %s)", m.names[i], copies[i].Generation, orDash(copies[i].Status.SpecHash)))
			}
			parts = append(parts, "{"+strings.Join(who, ", ")+"}")
		}
		m.flag(DisagreeSpec, object, m.namesOf(present),
			"the clusters hold different specs: %s; the clusters have not all applied the same Git revision", strings.Join(parts, " vs "))
	} else if len(present) > 1 {
		var withHash []int
		for _, i := range present {
			if copies[i].Status.SpecHash != "" {
				withHash = append(withHash, i)
			}
		}
		if len(groupBy(withHash, func(a, b int) bool { return copies[a].Status.SpecHash == copies[b].Status.SpecHash })) > 1 {
			var who []string
			for _, i := range withHash {
				who = append(who, fmt.Sprintf("%s=%s", m.names[i], copies[i].Status.SpecHash))
			}
			m.flag(DisagreeSpecHash, object, m.namesOf(withHash),
				"the specs are equal but status.specHash differs (%s): an operator has not processed the current spec, or the operators run different versions", strings.Join(who, ", "))
		}
		row.Expected = shares(expectedBy[present[0]])
	} else if len(present) == 1 {
		row.Expected = shares(expectedBy[present[0]])
	}

	// The allocation each cluster computed for each target, against the others and against
	// placement.ForWorkload of its own spec.
	computed := map[string]map[int]int32{} // target -> snapshot index -> desired
	for _, i := range present {
		for _, t := range copies[i].Status.Targets {
			if computed[t.Cluster] == nil {
				computed[t.Cluster] = map[int]int32{}
			}
			computed[t.Cluster][i] = t.DesiredReplicas
		}
	}
	for _, target := range sortedMapKeys(computed) {
		byCluster := computed[target]
		distinct := map[int32]bool{}
		for _, v := range byCluster {
			distinct[v] = true
		}
		if len(distinct) < 2 {
			continue
		}
		var idx []int
		var who []string
		for _, i := range present {
			if v, ok := byCluster[i]; ok {
				idx = append(idx, i)
				who = append(who, fmt.Sprintf("%s computed %d", m.names[i], v))
			}
		}
		m.flag(DisagreeAllocation, object, m.namesOf(idx),
			"desired replicas for target %s differ: %s", target, strings.Join(who, ", "))
	}
	for _, i := range present {
		w := copies[i]
		if expectedBy[i] == nil || len(w.Status.Targets) == 0 || w.Status.ObservedGeneration != w.Generation {
			continue
		}
		if got, want := formatShares(row.Clusters[i].Targets), formatShares(row.Clusters[i].Expected); got != want {
			m.flag(DisagreeExpected, object, []string{m.names[i]},
				"%s reports targets %s but placement of its spec gives %s: the operator in %s computes allocations differently (version skew?)",
				m.names[i], got, want, m.names[i])
		}
	}

	// Slices with replicas that no reachable cluster reports as its own.
	wanted := map[string]bool{}
	for _, i := range present {
		for _, s := range expectedBy[i] {
			if s.Replicas > 0 {
				wanted[s.Cluster] = true
			}
		}
	}
	for _, target := range sortedMapKeys(wanted) {
		reported := false
		for _, i := range present {
			if m.names[i] == target && copies[i].Status.Cluster == target {
				reported = true
			}
		}
		if !reported {
			m.flag(DisagreeUnreported, object, []string{target}, "target %s should run replicas but no reachable cluster reports it as local: %s",
				target, m.whyUnreported(target, copies))
		}
	}

	// Replicas in clusters the Workload does not target.
	for i := range m.snaps {
		if !m.reachable(i) {
			continue
		}
		targeted := false
		if copies[i] != nil {
			targeted = targets(copies[i], m.names[i])
		} else {
			for _, j := range present {
				targeted = targeted || targets(copies[j], m.names[i])
			}
		}
		if targeted {
			continue
		}
		var evidence []string
		if w := copies[i]; w != nil && (w.Status.ReadyReplicas > 0 || w.Status.DesiredReplicas > 0) {
			evidence = append(evidence, fmt.Sprintf("its status reports %d desired, %d ready", w.Status.DesiredReplicas, w.Status.ReadyReplicas))
		}
		if deps != nil && deps[i] != nil {
			d := deps[i]
			spec := int32(1)
			if d.Spec.Replicas != nil {
				spec = *d.Spec.Replicas
			}
			if spec > 0 || d.Status.Replicas > 0 {
				evidence = append(evidence, fmt.Sprintf("Deployment %s/%s has %d replicas (%d running)", d.Namespace, d.Name, spec, d.Status.Replicas))
			}
		}
		if len(evidence) > 0 {
			m.flag(DisagreeUntargeted, object, []string{m.names[i]},
				"%s is not a target but %s: the operator in %s should scale it to zero", m.names[i], strings.Join(evidence, "; "), m.names[i])
		}
	}

	// Readiness of the slices the reachable clusters run.
	for _, i := range present {
		w, cell := copies[i], row.Clusters[i]
		want, targetedHere := expectedBy[i].For(m.names[i])
		if !targetedHere || (want == 0 && cell.Desired == 0) {
			continue
		}
		switch {
		case w.Status.Cluster == "":
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: no status written yet (is the operator running?)", m.names[i]))
		case w.Status.ObservedGeneration < w.Generation:
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: status is for generation %d, the spec is at generation %d", m.names[i], w.Status.ObservedGeneration, w.Generation))
		case cell.Ready < cell.Desired:
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: %d/%d ready, phase %s", m.names[i], cell.Ready, cell.Desired, orDash(cell.Phase)))
		case cell.Phase != polykubev1alpha1.PhaseReady:
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: phase %s", m.names[i], orDash(cell.Phase)))
		}
	}
	row.Ready = len(row.NotReady) == 0 && len(present) > 0
	if len(present) == 0 {
		row.NotReady = append(row.NotReady, "no reachable cluster holds this Workload")
		row.Ready = false
	}
	if !row.Ready {
		m.notReady = append(m.notReady, object)
	}
	return row
}

func (m *merger) whyUnreported(target string, copies []*polykubev1alpha1.Workload) string {
	for i := range m.snaps {
		if m.names[i] != target {
			continue
		}
		switch {
		case !m.reachable(i):
			return fmt.Sprintf("context %s is not readable (%s)", m.snaps[i].Context, m.report.Clusters[i].Reason)
		case copies[i] == nil:
			return fmt.Sprintf("context %s has no copy of the Workload", m.snaps[i].Context)
		default:
			return fmt.Sprintf("the copy in context %s has status.cluster %q (no status written, or the operator runs under another --cluster-name)", m.snaps[i].Context, copies[i].Status.Cluster)
		}
	}
	var unreadable []string
	for i := range m.snaps {
		if !m.reachable(i) {
			unreadable = append(unreadable, fmt.Sprintf("%s (%s)", m.snaps[i].Context, m.report.Clusters[i].Reason))
		}
	}
	if len(unreadable) > 0 {
		return fmt.Sprintf("no readable context is that cluster; it may be behind the unreadable context %s", strings.Join(unreadable, ", "))
	}
	return "no queried context is that cluster: add its context, or check the cluster names the operators report"
}

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
			m.flag(DisagreeRoster, object, m.namesOf(present), "the rosters differ: %s", strings.Join(parts, "; "))
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
			m.flag(DisagreeMissingCopy, object, m.namesOf(absent), "present in %s but absent from %s: check that Flux delivered the roster to every cluster",
				strings.Join(m.namesOf(present), ", "), strings.Join(m.namesOf(absent), ", "))
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
			m.flag(DisagreeMember, object, m.namesOf(present), "the copies differ: %s", strings.Join(parts, "; "))
		}
		m.report.Members = append(m.report.Members, row)
	}
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
	switch {
	case len(s.Unreachable) > 0:
		s.ExitCode = ExitUnreachable
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

func targets(w *polykubev1alpha1.Workload, cluster string) bool {
	for _, t := range w.Spec.Distribution.Targets {
		if t.ClusterRef == cluster {
			return true
		}
	}
	return false
}

func shares(a placement.Allocation) []Share {
	if a == nil {
		return nil
	}
	out := make([]Share, 0, len(a))
	for _, s := range a {
		out = append(out, Share{Cluster: s.Cluster, Replicas: s.Replicas})
	}
	sortShares(out)
	return out
}

func sortShares(s []Share) { sort.Slice(s, func(i, j int) bool { return s[i].Cluster < s[j].Cluster }) }

func formatShares(s []Share) string {
	parts := make([]string, 0, len(s))
	for _, x := range s {
		parts = append(parts, fmt.Sprintf("%s=%d", x.Cluster, x.Replicas))
	}
	return "[" + strings.Join(parts, " ") + "]"
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
