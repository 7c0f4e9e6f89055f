// Package suspend is what every Polykube reconciler shares about pausing and about reconciling
// on request, as Flux has them (spec.suspend, reconcile.fluxcd.io/requestedAt).
//
// A suspended object gets one write: its Ready condition says Unknown/Suspended (and the status
// echoes a requested reconcile), so that a person reading it, or polykube-status, sees that the
// operator stands back. Nothing else is read or written for it: a hand fix made during an
// incident stays until suspend is false again. The Ready condition is Unknown, not False,
// because the operator no longer checks what runs.
//
// A reconcile request is an annotation whose value changes; the controllers' predicates pass
// only generation changes, so RequestedOrGenerationChanged lets that annotation through too.
package suspend

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// RequestedAt is the value of the object's reconcile request annotation ("" without one).
func RequestedAt(o metav1.Object) string {
	return o.GetAnnotations()[polykubev1alpha1.ReconcileRequestedAtAnnotation]
}

// Handled records in lastHandled that the object's reconcile request, if any, ran.
func Handled(o metav1.Object, lastHandled *string) {
	if v := RequestedAt(o); v != "" {
		*lastHandled = v
	}
}

// requestChanged passes the updates that change the reconcile request annotation.
var requestChanged = predicate.Funcs{
	CreateFunc:  func(event.CreateEvent) bool { return false },
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return RequestedAt(e.ObjectOld) != RequestedAt(e.ObjectNew)
	},
}

// RequestedOrGenerationChanged passes what GenerationChangedPredicate passes (creations,
// deletions, spec changes) and the updates that request a reconcile.
func RequestedOrGenerationChanged() predicate.Predicate {
	return predicate.Or[client.Object](predicate.GenerationChangedPredicate{}, requestChanged)
}

// MarkSuspended records that the operator saw generation of an object of kind suspended: the
// status's observedGeneration, and Ready set to Unknown/Suspended; every other condition stays
// as the last reconcile left it.
func MarkSuspended(observedGeneration *int64, conditions *[]metav1.Condition, generation int64, kind string) {
	*observedGeneration = generation
	meta.SetStatusCondition(conditions, metav1.Condition{
		Type:               polykubev1alpha1.ReadyCondition,
		Status:             metav1.ConditionUnknown,
		Reason:             polykubev1alpha1.ReasonSuspended,
		Message:            "spec.suspend is true: the operator changes nothing for this " + kind + " in this cluster until it is false (set it back in Git, or patch it here)",
		ObservedGeneration: generation,
	})
}
