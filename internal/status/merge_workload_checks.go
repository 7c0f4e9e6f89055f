package status

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// copiesOf is what the checks of one Workload read: its copy and Deployment in each snapshot
// (nil where there is none), and what each copy's own cluster makes of it.
type copiesOf struct {
	object string
	copies []*polykubev1alpha1.Workload
	deps   []*appsv1.Deployment
	// present are the snapshots holding a copy; absent the reachable ones that hold none.
	present, absent []int
	// specGroups partition present by equal spec.
	specGroups [][]int
	// expectedBy is the allocation of each copy over its own cluster's roster (nil when its
	// spec cannot be allocated); resolvedBy the targets it resolves there (nil likewise).
	expectedBy []placement.Allocation
	// expectedDigest is placement.AllocationDigest of each expectedBy (computed once per group
	// of copies with equal specs over equal rosters).
	expectedDigest []string
	resolvedBy     [][]string
	row            *WorkloadRow
}

// workloadCheck flags one kind of disagreement among the copies of a Workload, or records in
// its row what keeps it from being ready.
type workloadCheck func(m *merger, c *copiesOf)

// workloadChecks run in this order; the report lists the disagreements they flag in it. A new
// detector is a function here and a line in this list.
var workloadChecks = []workloadCheck{
	checkMissingCopies,
	checkSpecsAgree,
	checkResolvedTargetsAgree,
	checkAllocationsAgree,
	checkAllocationsExpected,
	checkTargetsReported,
	checkUntargetedIdle,
	checkSlicesReady,
}

// checkMissingCopies flags a Workload some reachable clusters hold and others do not.
func checkMissingCopies(m *merger, c *copiesOf) {
	if len(c.present) > 0 && len(c.absent) > 0 {
		m.flag(DisagreeMissingCopy, c.object, m.namesOf(c.absent),
			"present in %s but absent from %s: check that Flux delivered the manifests to every cluster",
			strings.Join(m.namesOf(c.present), ", "), strings.Join(m.namesOf(c.absent), ", "))
	}
}

// checkSpecsAgree flags copies with different specs, or, with equal specs, different
// status.specHash (an operator behind, or operators of different versions).
func checkSpecsAgree(m *merger, c *copiesOf) {
	copies := c.copies
	if len(c.specGroups) > 1 {
		var parts []string
		for _, g := range c.specGroups {
			var who []string
			for _, i := range g {
				who = append(who, fmt.Sprintf("%s (generation %d, specHash %s)", m.names[i], copies[i].Generation, orDash(copies[i].Status.SpecHash)))
			}
			parts = append(parts, "{"+strings.Join(who, ", ")+"}")
		}
		m.flag(DisagreeSpec, c.object, m.namesOf(c.present),
			"the clusters hold different specs: %s; the clusters have not all applied the same Git revision", strings.Join(parts, " vs "))
		return
	}
	var withHash []int
	for _, i := range c.present {
		if copies[i].Status.SpecHash != "" {
			withHash = append(withHash, i)
		}
	}
	if len(groupBy(withHash, func(a, b int) bool { return copies[a].Status.SpecHash == copies[b].Status.SpecHash })) > 1 {
		var who []string
		for _, i := range withHash {
			who = append(who, fmt.Sprintf("%s=%s", m.names[i], copies[i].Status.SpecHash))
		}
		m.flag(DisagreeSpecHash, c.object, m.namesOf(withHash),
			"the specs are equal but status.specHash differs (%s): an operator has not processed the current spec, or the operators run different versions", strings.Join(who, ", "))
	}
}

// checkResolvedTargetsAgree flags equal specs that resolve different targets from the
// clusters' rosters (resolvedTargetsAgree).
func checkResolvedTargetsAgree(m *merger, c *copiesOf) {
	if len(c.specGroups) == 1 && len(c.present) > 1 {
		m.resolvedTargetsAgree(c.object, c.present, c.copies, c.resolvedBy)
	}
}

// checkAllocationsAgree flags a target whose desired replicas the clusters computed
// differently.
func checkAllocationsAgree(m *merger, c *copiesOf) {
	// target -> what each copy computed for it, in snapshot order (a slice rather than a map
	// per target: at 50 clusters × 50 targets this runs 2,500 times per Workload).
	type computedBy struct {
		i int
		v int32
	}
	computed := map[string][]computedBy{}
	for _, i := range c.present {
		for _, t := range c.copies[i].Status.Targets {
			list := computed[t.Cluster]
			if n := len(list); n > 0 && list[n-1].i == i {
				list[n-1].v = t.DesiredReplicas // a target listed twice: the last entry counts
				continue
			}
			computed[t.Cluster] = append(list, computedBy{i, t.DesiredReplicas})
		}
	}
	flagged := false
	for _, target := range sortedMapKeys(computed) {
		list := computed[target]
		if !slices.ContainsFunc(list[1:], func(e computedBy) bool { return e.v != list[0].v }) {
			continue
		}
		idx := make([]int, 0, len(list))
		who := make([]string, 0, len(list))
		for _, e := range list {
			idx = append(idx, e.i)
			who = append(who, fmt.Sprintf("%s computed %d", m.names[e.i], e.v))
		}
		m.flag(DisagreeAllocation, c.object, m.namesOf(idx),
			"desired replicas for target %s differ: %s", target, strings.Join(who, ", "))
		flagged = true
	}
	if !flagged {
		checkAllocationDigestsAgree(m, c)
	}
}

// checkAllocationDigestsAgree flags copies whose allocation digests differ (decision 0013): an
// operator that writes the digest does not list every target, so where a copy reports only its
// digest the clusters are compared by it. A digest computed from the full list an operator of
// the previous release wrote compares with one written by this release's, so a fleet in the
// middle of an upgrade shows no disagreement where the allocations are the same.
func checkAllocationDigestsAgree(m *merger, c *copiesOf) {
	var withDigest []int
	for _, i := range c.present {
		if c.row.Clusters[i].AllocationDigest != "" {
			withDigest = append(withDigest, i)
		}
	}
	cells := c.row.Clusters
	groups := groupBy(withDigest, func(a, b int) bool { return cells[a].AllocationDigest == cells[b].AllocationDigest })
	if len(groups) < 2 {
		return
	}
	var parts []string
	for _, g := range groups {
		parts = append(parts, fmt.Sprintf("%s computed digest %s over %d targets", strings.Join(m.namesOf(g), ", "), cells[g[0]].AllocationDigest, cells[g[0]].AllocationTargets))
	}
	m.flag(DisagreeAllocation, c.object, m.namesOf(withDigest),
		"the clusters computed different allocations: %s; `-o yaml` lists the shares each cluster is expected to compute, and AllocationNotAsComputed names a cluster whose operator computes differently",
		strings.Join(parts, "; "))
}

// checkAllocationsExpected flags a cluster whose reported targets are not what placement
// computes from its spec and roster (an operator of another version).
func checkAllocationsExpected(m *merger, c *copiesOf) {
	for _, i := range c.present {
		w := c.copies[i]
		if c.expectedBy[i] == nil || w.Status.ObservedGeneration != w.Generation {
			continue
		}
		if len(w.Status.Targets) == 0 {
			// The digest layout (decision 0013): compare the digest with that of the recomputation.
			cell := c.row.Clusters[i]
			if a := w.Status.Allocation; a != nil {
				if want := c.expectedDigest[i]; a.Digest != want || int(a.Targets) != len(c.expectedBy[i]) {
					m.flag(DisagreeExpected, c.object, []string{m.names[i]},
						"%s reports an allocation over %d targets (digest %s) but placement of its spec over its roster gives %s (digest %s): the operator in %s computes allocations differently (version skew?)",
						m.names[i], a.Targets, a.Digest, formatShares(cell.Expected), want, m.names[i])
				}
			}
			continue
		}
		if got, want := c.row.Clusters[i].Targets, c.row.Clusters[i].Expected; !slices.Equal(got, want) {
			m.flag(DisagreeExpected, c.object, []string{m.names[i]},
				"%s reports targets %s but placement of its spec gives %s: the operator in %s computes allocations differently (version skew?)",
				m.names[i], formatShares(got), formatShares(want), m.names[i])
		}
	}
}

// checkTargetsReported flags a target that should run replicas but that no reachable cluster
// reports as its own.
func checkTargetsReported(m *merger, c *copiesOf) {
	wanted := map[string]bool{}
	for _, i := range c.present {
		for _, s := range c.expectedBy[i] {
			if s.Replicas > 0 {
				wanted[s.Cluster] = true
			}
		}
	}
	for _, target := range sortedMapKeys(wanted) {
		reported := false
		for _, i := range c.present {
			if m.names[i] == target && c.copies[i].Status.Cluster == target {
				reported = true
			}
		}
		if !reported {
			m.flag(DisagreeUnreported, c.object, []string{target}, "target %s should run replicas but no reachable cluster reports it as local: %s",
				target, m.whyUnreported(target, c.copies))
		}
	}
}

// checkUntargetedIdle flags replicas in a reachable cluster the Workload does not target.
func checkUntargetedIdle(m *merger, c *copiesOf) {
	for i := range m.snaps {
		if !m.reachable(i) {
			continue
		}
		targeted := false
		if c.copies[i] != nil {
			targeted = slices.Contains(c.resolvedBy[i], m.names[i])
		} else {
			for _, j := range c.present {
				targeted = targeted || slices.Contains(c.resolvedBy[j], m.names[i])
			}
		}
		if targeted {
			continue
		}
		var evidence []string
		if w := c.copies[i]; w != nil && (w.Status.ReadyReplicas > 0 || w.Status.DesiredReplicas > 0) {
			evidence = append(evidence, fmt.Sprintf("its status reports %d desired, %d ready", w.Status.DesiredReplicas, w.Status.ReadyReplicas))
		}
		if c.deps != nil && c.deps[i] != nil {
			d := c.deps[i]
			spec := int32(1)
			if d.Spec.Replicas != nil {
				spec = *d.Spec.Replicas
			}
			if spec > 0 || d.Status.Replicas > 0 {
				evidence = append(evidence, fmt.Sprintf("Deployment %s/%s has %d replicas (%d running)", d.Namespace, d.Name, spec, d.Status.Replicas))
			}
		}
		if len(evidence) > 0 {
			m.flag(DisagreeUntargeted, c.object, []string{m.names[i]},
				"%s is not a target but %s: the operator in %s should scale it to zero", m.names[i], strings.Join(evidence, "; "), m.names[i])
		}
	}
}

// checkSlicesReady records, in the row, each targeted slice that is not ready and why, and each
// cluster whose roster selects nothing.
func checkSlicesReady(m *merger, c *copiesOf) {
	row := c.row
	for _, i := range c.present {
		w, cell := c.copies[i], row.Clusters[i]
		if cell.Suspended {
			continue
		}
		want, targetedHere := c.expectedBy[i].For(m.names[i])
		if !targetedHere || (want == 0 && cell.Desired == 0) {
			continue
		}
		switch {
		case w.Status.Cluster == "":
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: no status written yet (is the operator running?)", m.names[i]))
		case w.Status.ObservedGeneration < w.Generation:
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: status is for generation %d, the spec is at generation %d", m.names[i], w.Status.ObservedGeneration, w.Generation))
		case readyBehind(w) > 0:
			// status.observedGeneration is written when the operator starts on a generation;
			// the Ready condition's, when it has judged it.
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: its Ready condition is for generation %d, the spec is at generation %d (the operator has not finished with it)",
				m.names[i], readyBehind(w), w.Generation))
		case cell.Autoscaling != nil:
			// An HPA moves the replicas between the bounds: a slice still scaling is not
			// unready, one below its minimum or failing is.
			if reason := autoscaledNotReady(cell); reason != "" {
				row.NotReady = append(row.NotReady, m.names[i]+": "+reason)
			}
		case cell.Ready < cell.Desired:
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: %d/%d ready, phase %s", m.names[i], cell.Ready, cell.Desired, orDash(cell.Phase)))
		case cell.Phase != polykubev1alpha1.PhaseReady:
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: phase %s", m.names[i], orDash(cell.Phase)))
		}
	}
	for _, i := range c.present {
		if c.resolvedBy[i] != nil && len(c.resolvedBy[i]) == 0 {
			row.NotReady = append(row.NotReady, fmt.Sprintf("%s: no ClusterMember of its roster matches spec.distribution.targetSelectors; nothing runs for this Workload there", m.names[i]))
		}
	}
}

// specGroupsOf partitions the snapshots holding a copy by equal spec. Copies read with the same
// spec JSON share one spec (specs, from their compact form) and need no comparison.
func specGroupsOf(present []int, copies []*polykubev1alpha1.Workload, specs []*polykubev1alpha1.WorkloadSpec) [][]int {
	return groupBy(present, func(a, b int) bool {
		return specs[a] == specs[b] ||
			apiequality.Semantic.DeepEqual(specForComparison(copies[a]), specForComparison(copies[b]))
	})
}

// readyBehind is the generation of w's Ready condition when it is older than w's spec, else 0.
// A condition without observedGeneration (0) says nothing either way.
func readyBehind(w *polykubev1alpha1.Workload) int64 {
	c := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.ReadyCondition)
	if c == nil || c.ObservedGeneration == 0 || c.ObservedGeneration >= w.Generation {
		return 0
	}
	return c.ObservedGeneration
}
