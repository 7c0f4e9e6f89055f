package status

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	appsv1 "k8s.io/api/apps/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// The workloads view: one row per Workload, its copies checked against each other and
// against the allocation every cluster should compute.

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
	copies := map[wlKey][]*workloadCopy{}
	deps := map[wlKey][]*deploymentCopy{}
	for i := range m.snaps {
		if !m.reachable(i) {
			continue
		}
		objs := m.objs[i]
		for j := range objs.workloads {
			w := &objs.workloads[j]
			if !m.matches(w.meta.Name) || m.q.Namespace != "" && w.meta.Namespace != m.q.Namespace {
				continue
			}
			k := wlKey{w.meta.Namespace, w.meta.Name}
			if copies[k] == nil {
				copies[k] = make([]*workloadCopy, len(m.snaps))
			}
			copies[k][i] = w
		}
		for j := range objs.deployments {
			d := &objs.deployments[j]
			name := d.labels[polykubev1alpha1.WorkloadNameLabel]
			if name == "" || !m.matches(name) || m.q.Namespace != "" && d.namespace != m.q.Namespace {
				continue
			}
			k := wlKey{d.namespace, name}
			if deps[k] == nil {
				deps[k] = make([]*deploymentCopy, len(m.snaps))
			}
			deps[k][i] = d
			if copies[k] == nil {
				copies[k] = make([]*workloadCopy, len(m.snaps))
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
		// The full objects of one Workload at a time: garbage once its row is built.
		ws := make([]*polykubev1alpha1.Workload, len(m.snaps))
		specs := make([]*polykubev1alpha1.WorkloadSpec, len(m.snaps))
		for i, c := range copies[k] {
			if c != nil {
				w := c.workload()
				ws[i], specs[i] = &w, c.spec
			}
		}
		var ds []*appsv1.Deployment
		if deps[k] != nil {
			ds = make([]*appsv1.Deployment, len(m.snaps))
			for i, c := range deps[k] {
				if c != nil {
					d := c.deployment()
					ds[i] = &d
				}
			}
		}
		m.report.Workloads = append(m.report.Workloads, m.workload(k, ws, specs, ds))
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

func (m *merger) workload(k wlKey, copies []*polykubev1alpha1.Workload, specs []*polykubev1alpha1.WorkloadSpec, deps []*appsv1.Deployment) WorkloadRow {
	object := "Workload " + k.String()
	row := WorkloadRow{Namespace: k.ns, Name: k.name}
	firstDisagreement := len(m.report.Disagreements)
	var present, absent []int
	expectedBy := make([]placement.Allocation, len(m.snaps))
	// expectedDigest is placement.AllocationDigest of expectedBy, where that is set.
	expectedDigest := make([]string, len(m.snaps))
	// resolvedBy is the target list each copy resolves from its own cluster's roster (nil when
	// its spec is invalid).
	resolvedBy := make([][]string, len(m.snaps))
	// The placement of a copy depends on its spec and its cluster's roster only: computed once
	// per group of equal specs and equal rosters, not once per cluster (50 clusters holding the
	// same spec and roster ask for the same allocation 50 times).
	var withCopy []int
	for i := range m.snaps {
		if copies[i] != nil {
			withCopy = append(withCopy, i)
		}
	}
	specGroups := specGroupsOf(withCopy, copies, specs)
	specGroupOf := make([]int, len(m.snaps))
	for g, idx := range specGroups {
		for _, i := range idx {
			specGroupOf[i] = g
		}
	}
	placed := map[[2]int]placementOf{}
	clear(m.templates)

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
		if a := w.Status.Autoscaling; a != nil && w.Spec.Autoscaling != nil {
			cell.Autoscaling = &Autoscaled{MinReplicas: a.MinReplicas, MaxReplicas: a.MaxReplicas, CurrentReplicas: a.CurrentReplicas}
		}
		reportedAllocation(w, &cell)
		key := [2]int{specGroupOf[i], m.rosterGroup(i)}
		p, ok := placed[key]
		if !ok {
			p = placementIn(w, m.snaps[i].ClusterMembers)
			placed[key] = p
		}
		resolvedBy[i] = p.resolved
		if placement.UsesRoster(w) {
			cell.ResolvedTargets = resolvedBy[i]
		}
		cell.Targeted = slices.Contains(resolvedBy[i], m.names[i])
		switch alloc, err := p.alloc, p.allocErr; {
		case errors.Is(err, placement.ErrNoTargets):
			// Valid, but nothing of this cluster's roster is selected: the operator there
			// reports NoTargets and changes nothing.
			expectedBy[i] = placement.Allocation{}
			cell.Expected = []Share{}
		case err != nil:
			m.flag(DisagreeInvalidSpec, object, []string{m.names[i]},
				"the copy in %s cannot be allocated: %v; fix the manifest in Git", m.names[i], err)
		default:
			expectedBy[i] = alloc
			// Shared by the cells of the group: the report's largest part at C = 50 otherwise
			// (C shares in each of C cells of every Workload).
			cell.Expected = p.shares
		}
		expectedDigest[i] = p.digest
		if m.markSuspended(i, w, &cell); !cell.Suspended {
			// A suspended copy's Deployment may carry a deliberate hand edit.
			m.workloadFailure(i, w, &cell)
			m.checkTemplate(object, i, specGroupOf[i], w, deploymentAt(deps, i), &cell)
		}
		m.checkFailover(object, i, w, &cell)
		row.Clusters = append(row.Clusters, cell)
		row.DesiredTotal += cell.Desired
		row.ReadyTotal += cell.Ready
	}

	c := &copiesOf{
		object: object, copies: copies, deps: deps, present: present, absent: absent,
		specGroups: specGroups, expectedBy: expectedBy, expectedDigest: expectedDigest, resolvedBy: resolvedBy, row: &row,
	}
	// The fleet expects one allocation when the copies agree on the spec.
	if len(present) > 0 && len(c.specGroups) == 1 {
		row.Expected = SharesOf(expectedBy[present[0]])
	}
	for _, check := range workloadChecks {
		check(m, c)
	}
	m.checkFailoverClaims(object, &row)
	m.blameFailures(firstDisagreement, &row, "Workload")
	row.Ready = len(row.NotReady) == 0 && len(present) > 0 && !slices.ContainsFunc(row.Clusters, func(c WorkloadInCluster) bool { return c.Failure != nil })
	if len(present) == 0 {
		row.NotReady = append(row.NotReady, "no reachable cluster holds this Workload")
		row.Ready = false
	}
	// A failing copy keeps the row from being ready but is counted among the failures only.
	if len(row.NotReady) > 0 {
		m.notReady = append(m.notReady, object)
	}
	return row
}

// reportedAllocation reads the allocation a copy's operator reports, in either layout: the
// full list of targets an operator before decision 0013 wrote (status.targets, whose digest is
// computed here), or the digest and count a later one writes (status.allocation). A copy that
// has both is read by its list: only an operator of the previous release writes the list, and it
// leaves the fields it does not know in place (a merge patch of what it decoded), so when both
// are there the list is the newer (the two operator pods of one cluster during its rollout).
func reportedAllocation(w *polykubev1alpha1.Workload, cell *WorkloadInCluster) {
	for _, t := range w.Status.Targets {
		cell.Targets = append(cell.Targets, Share{Cluster: t.Cluster, Replicas: t.DesiredReplicas})
	}
	sortShares(cell.Targets)
	if digest, n, ok := placement.ReportedAllocation(&w.Status); ok {
		cell.AllocationDigest, cell.AllocationTargets = digest, int32(n)
	}
}

// placementOf is what placement computes of one spec over one roster.
type placementOf struct {
	// resolved is the target list (nil when the spec is invalid, empty when it selects none).
	resolved []string
	alloc    placement.Allocation
	allocErr error
	// shares are alloc as shares and digest its digest (that of no target when the spec
	// selects none), computed once for every copy of the group.
	shares []Share
	digest string
}

func placementIn(w *polykubev1alpha1.Workload, roster []polykubev1alpha1.ClusterMember) placementOf {
	var p placementOf
	if resolved, err := placement.ResolveTargets(w.Spec.Distribution, roster); err == nil {
		p.resolved = clustersOf(resolved)
	} else if errors.Is(err, placement.ErrNoTargets) {
		p.resolved = []string{}
	}
	p.alloc, p.allocErr = placement.ForWorkloadIn(w, roster)
	switch {
	case p.allocErr == nil:
		p.shares, p.digest = SharesOf(p.alloc), placement.AllocationDigest(p.alloc)
	case errors.Is(p.allocErr, placement.ErrNoTargets):
		p.digest = placement.AllocationDigest(placement.Allocation{})
	}
	return p
}

// autoscaledNotReady says why an autoscaled slice is not ready ("" when it is): fewer ready
// replicas than its HPA's minimum, or a Deployment that is degraded or has no status yet.
func autoscaledNotReady(cell WorkloadInCluster) string {
	a := cell.Autoscaling
	switch {
	case cell.Ready < a.MinReplicas:
		return fmt.Sprintf("%d ready, below its autoscaling minimum (%d..%d, currently %d), phase %s",
			cell.Ready, a.MinReplicas, a.MaxReplicas, a.CurrentReplicas, orDash(cell.Phase))
	case cell.Phase == polykubev1alpha1.PhaseDegraded || cell.Phase == polykubev1alpha1.PhasePending || cell.Phase == "":
		return fmt.Sprintf("phase %s", orDash(cell.Phase))
	}
	return ""
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

// resolvedTargetsAgree flags a Workload whose copies hold the same spec but resolve different
// targets, because its targetSelectors select from rosters (ClusterMembers) that differ between
// the clusters: each operator then allocates over other targets. It records the Workload so that
// the roster findings can name it.
func (m *merger) resolvedTargetsAgree(object string, present []int, copies []*polykubev1alpha1.Workload, resolvedBy [][]string) {
	if !placement.UsesRoster(copies[present[0]]) {
		return
	}
	var withTargets []int
	for _, i := range present {
		if resolvedBy[i] != nil {
			withTargets = append(withTargets, i)
		}
	}
	groups := groupBy(withTargets, func(a, b int) bool { return slices.Equal(resolvedBy[a], resolvedBy[b]) })
	if len(groups) < 2 {
		return
	}
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s resolve [%s]", strings.Join(m.namesOf(g), ", "), strings.Join(resolvedBy[g[0]], " ")))
	}
	m.flag(DisagreeRoster, object, m.namesOf(withTargets),
		"the same spec resolves different targets from the clusters' rosters: %s; the ClusterMembers differ between the clusters (see the ClusterMember findings): check that Flux delivered the same roster everywhere",
		strings.Join(parts, "; "))
	m.rosterAffected = append(m.rosterAffected, strings.TrimPrefix(object, "Workload "))
}

func clustersOf(ts []placement.Target) []string {
	out := make([]string, 0, len(ts))
	for _, t := range ts {
		out = append(out, t.Cluster)
	}
	return out
}

// SharesOf lists an allocation as shares, sorted by cluster.
func SharesOf(a placement.Allocation) []Share {
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
