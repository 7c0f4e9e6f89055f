package status

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Failures: what an operator says about its own cluster. status.observedGeneration says only
// that the operator saw a generation, not that it finished with it (an operator records it and
// then fails), so a current status with a failing Ready condition is a failure of that cluster,
// whatever its replica counts say. ServiceEndpoints and DatastoreBindings have no replicas to
// compare: their conditions are all there is.

// transientReasons are the reasons of a Ready (or Bound) condition that is False on the way to
// True: something is rolling out or waiting on another object. Any other reason of a False
// condition is a failure (ReconcileFailed, InvalidSpec, Conflict, ClusterUnknown,
// IdentityMismatch, SecretNotFound, SecretKeyMissing, EnvConflict, and reasons added later).
var transientReasons = []string{
	polykubev1alpha1.ReasonSucceeded,
	polykubev1alpha1.ReasonProgressing,
	polykubev1alpha1.ReasonDeploymentPending,
	polykubev1alpha1.ReasonDegraded,
	polykubev1alpha1.ReasonNoTargets,
	polykubev1alpha1.ReasonNotTargeted,
	polykubev1alpha1.ReasonWorkloadNotFound,
}

// failing is the condition of conds that reports a failure, or nil.
func failing(conds []metav1.Condition, typ string) *metav1.Condition {
	c := meta.FindStatusCondition(conds, typ)
	if c == nil || c.Status != metav1.ConditionFalse || slices.Contains(transientReasons, c.Reason) {
		return nil
	}
	return c
}

// fail records a failure of one object in snapshot i.
func (m *merger) fail(kind, ns, name string, i int, c *metav1.Condition) {
	f := Failure{Kind: kind, Namespace: ns, Name: name, Context: m.snaps[i].Context, Cluster: m.names[i],
		Condition: c.Type, Reason: c.Reason, Message: c.Message}
	if !c.LastTransitionTime.IsZero() {
		f.Since = c.LastTransitionTime.DeepCopy()
	}
	m.report.Failures = append(m.report.Failures, f)
}

// workloadFailure records the failure the copy w in snapshot i reports, in cell and in the report.
func (m *merger) workloadFailure(i int, w *polykubev1alpha1.Workload, cell *WorkloadInCluster) {
	c := failing(w.Status.Conditions, polykubev1alpha1.ReadyCondition)
	if c == nil {
		return
	}
	cell.Failure = &Check{Type: c.Type, Status: string(c.Status), Reason: c.Reason, Message: c.Message}
	m.fail("Workload", w.Namespace, w.Name, i, c)
}

// blameFailures adds to each disagreement from index from on that involves a cluster whose
// copy reports a failure, that the failure comes first: its status may be left from before it.
func (m *merger) blameFailures(from int, row *WorkloadRow, kind string) {
	var who []string
	for _, cell := range row.Clusters {
		if cell.Failure != nil {
			who = append(who, cell.Cluster)
		}
	}
	if len(who) == 0 {
		return
	}
	for d := from; d < len(m.report.Disagreements); d++ {
		dis := &m.report.Disagreements[d]
		var notes []string
		for _, cell := range row.Clusters {
			if cell.Failure != nil && slices.Contains(dis.Clusters, cell.Cluster) {
				notes = append(notes, fmt.Sprintf("%s's operator reports %s=False (%s) for this %s", cell.Cluster, cell.Failure.Type, cell.Failure.Reason, kind))
			}
		}
		if len(notes) > 0 {
			dis.Message += "; but " + strings.Join(notes, ", and ") + ": its status may be left from before the failure, so see FAILING first"
		}
	}
}

// servicesAndBindings records the failures, and what is not ready yet, of every ServiceEndpoint
// and DatastoreBinding read, for the Workloads the query selects, and the identity refusals
// operators write on ClusterMembers.
func (m *merger) servicesAndBindings() {
	for i, s := range m.snaps {
		if !m.reachable(i) {
			continue
		}
		for _, se := range s.ServiceEndpoints {
			if m.selects(se.Namespace, se.Spec.WorkloadRef.Name) && !m.suspendedObject("ServiceEndpoint", &se.ObjectMeta, se.Spec.Suspend, se.Status.Conditions, i) {
				m.condition("ServiceEndpoint", &se.ObjectMeta, se.Status.ObservedGeneration, se.Status.Conditions, polykubev1alpha1.ReadyCondition, i)
			}
		}
		for _, b := range s.DatastoreBindings {
			if m.selects(b.Namespace, b.Spec.WorkloadRef.Name) && !m.suspendedObject("DatastoreBinding", &b.ObjectMeta, b.Spec.Suspend, b.Status.Conditions, i) {
				m.condition("DatastoreBinding", &b.ObjectMeta, b.Status.ObservedGeneration, b.Status.Conditions, polykubev1alpha1.BoundCondition, i)
			}
		}
		// An operator that refused to start as the member this cluster is pinned to says so on
		// that ClusterMember, and reconciles nothing here: whatever the query, that is a failure.
		for _, cm := range s.ClusterMembers {
			if c := meta.FindStatusCondition(cm.Status.Conditions, polykubev1alpha1.OperatorIdentityCondition); c != nil && c.Status == metav1.ConditionFalse {
				m.fail("ClusterMember", "", cm.Name, i, c)
			}
		}
	}
}

func (m *merger) selects(ns, workload string) bool {
	return (m.q.Namespace == "" || ns == m.q.Namespace) && m.matches(workload)
}

// condition judges one ServiceEndpoint or DatastoreBinding by its Ready condition; detail is the
// condition that says more about it (Bound of a binding, whose Ready mirrors it).
func (m *merger) condition(kind string, obj *metav1.ObjectMeta, observed int64, conds []metav1.Condition, detail string, i int) {
	object := fmt.Sprintf("%s %s/%s in %s", kind, obj.Namespace, obj.Name, m.names[i])
	ready := meta.FindStatusCondition(conds, polykubev1alpha1.ReadyCondition)
	switch {
	case ready == nil:
		m.notReady = append(m.notReady, object+": no status written yet (is the operator running?)")
		return
	case ready.Status == metav1.ConditionTrue && observed >= obj.Generation:
		return
	case ready.Status == metav1.ConditionTrue:
		m.notReady = append(m.notReady, fmt.Sprintf("%s: status is for generation %d, the spec is at generation %d", object, observed, obj.Generation))
		return
	}
	c := meta.FindStatusCondition(conds, detail)
	if c == nil || c.Status == metav1.ConditionTrue {
		c = ready
	}
	if f := failing([]metav1.Condition{*c}, c.Type); f != nil {
		m.fail(kind, obj.Namespace, obj.Name, i, f)
		return
	}
	m.notReady = append(m.notReady, fmt.Sprintf("%s: %s=%s (%s): %s", object, c.Type, c.Status, c.Reason, c.Message))
}

// sortFailures orders the failures by kind, object and context, and names them in the summary.
func (m *merger) sortFailures() []string {
	ctxOrder := map[string]int{}
	for i, s := range m.snaps {
		ctxOrder[s.Context] = i
	}
	fs := m.report.Failures
	sort.SliceStable(fs, func(a, b int) bool {
		x, y := fs[a], fs[b]
		if x.Kind != y.Kind {
			return x.Kind < y.Kind
		}
		if x.Namespace+"/"+x.Name != y.Namespace+"/"+y.Name {
			return x.Namespace+"/"+x.Name < y.Namespace+"/"+y.Name
		}
		return ctxOrder[x.Context] < ctxOrder[y.Context]
	})
	var out []string
	for _, f := range fs {
		out = append(out, fmt.Sprintf("%s %s in %s: %s", f.Kind, f.objectName(), f.Cluster, f.Reason))
	}
	return out
}

// objectName is namespace/name, or the name of a cluster-scoped object.
func (f Failure) objectName() string {
	if f.Namespace == "" {
		return f.Name
	}
	return f.Namespace + "/" + f.Name
}
