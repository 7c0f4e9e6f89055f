package status

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Suspended objects. spec.suspend is a switch a person sets in one cluster (through Git) to stop
// that cluster's operator for an emergency hot-patch. While it is on, the operator writes only
// Ready=Unknown (Suspended) and leaves everything else as it was: the status is frozen, the
// Deployment may carry the hand edit. So a suspended copy is shown as suspended, and is neither
// a failure, nor unready, nor a spec disagreement with its unsuspended copies in other clusters;
// a notice per copy keeps it from being forgotten. The exit code does not change: a suspension
// is deliberate, and --wait must not wait for it to end.

// NoticeSuspended: an object is suspended in a cluster (spec.suspend, or a Ready condition with
// reason Suspended): its operator changes nothing for it there, on purpose.
const NoticeSuspended = "Suspended"

// isSuspended is true when spec.suspend is set, or the operator reports Ready with reason
// Suspended (an older copy of the spec read, or the spec changed since the status was written).
func isSuspended(specSuspend bool, conds []metav1.Condition) bool {
	if specSuspend {
		return true
	}
	c := meta.FindStatusCondition(conds, polykubev1alpha1.ReadyCondition)
	return c != nil && c.Reason == polykubev1alpha1.ReasonSuspended
}

// markSuspended records whether the copy w in snapshot i is suspended, in cell and as a notice.
func (m *merger) markSuspended(i int, w *polykubev1alpha1.Workload, cell *WorkloadInCluster) {
	if !isSuspended(w.Spec.Suspend, w.Status.Conditions) {
		return
	}
	cell.Suspended = true
	m.suspendedNotice("Workload", &w.ObjectMeta, i)
}

// suspendedObject records a suspended ServiceEndpoint or DatastoreBinding and reports whether
// it is suspended, so that its conditions are not judged.
func (m *merger) suspendedObject(kind string, obj *metav1.ObjectMeta, specSuspend bool, conds []metav1.Condition, i int) bool {
	if !isSuspended(specSuspend, conds) {
		return false
	}
	m.suspendedNotice(kind, obj, i)
	return true
}

func (m *merger) suspendedNotice(kind string, obj *metav1.ObjectMeta, i int) {
	m.notice(NoticeSuspended, kind+" "+obj.Namespace+"/"+obj.Name, []string{m.names[i]},
		"suspended in %s: its operator changes nothing for it there until spec.suspend is false again (its status is as it was when suspended)", m.names[i])
}

// specForComparison is spec without spec.suspend, which is meant to differ between clusters.
func specForComparison(w *polykubev1alpha1.Workload) polykubev1alpha1.WorkloadSpec {
	s := w.Spec
	s.Suspend = false
	return s
}
