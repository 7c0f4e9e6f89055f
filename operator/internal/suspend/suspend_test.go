package suspend

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/event"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func workload(generation int64, requestedAt string) *polykubev1alpha1.Workload {
	w := &polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Name: "api", Generation: generation}}
	if requestedAt != "" {
		w.Annotations = map[string]string{polykubev1alpha1.ReconcileRequestedAtAnnotation: requestedAt}
	}
	return w
}

func TestRequestedOrGenerationChanged(t *testing.T) {
	p := RequestedOrGenerationChanged()
	for _, tc := range []struct {
		name     string
		old, new *polykubev1alpha1.Workload
		want     bool
	}{
		{"status or label only", workload(1, ""), workload(1, ""), false},
		{"spec changed", workload(1, ""), workload(2, ""), true},
		{"reconcile requested", workload(1, ""), workload(1, "t1"), true},
		{"requested again", workload(1, "t1"), workload(1, "t2"), true},
		{"request unchanged", workload(1, "t1"), workload(1, "t1"), false},
		{"request removed", workload(1, "t1"), workload(1, ""), true},
	} {
		if got := p.Update(event.UpdateEvent{ObjectOld: tc.old, ObjectNew: tc.new}); got != tc.want {
			t.Errorf("%s: passed=%v, want %v", tc.name, got, tc.want)
		}
	}
	if !p.Create(event.CreateEvent{Object: workload(1, "")}) || !p.Delete(event.DeleteEvent{Object: workload(1, "")}) {
		t.Error("creations and deletions must pass, as GenerationChangedPredicate passes them")
	}
}

func TestMarkSuspendedAndHandled(t *testing.T) {
	w := workload(3, "t1")
	w.Status.Conditions = []metav1.Condition{
		{Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: polykubev1alpha1.ReasonSucceeded},
		{Type: polykubev1alpha1.AllocatedCondition, Status: metav1.ConditionTrue, Reason: polykubev1alpha1.ReasonSucceeded},
	}
	MarkSuspended(&w.Status.ObservedGeneration, &w.Status.Conditions, w.Generation, "Workload")
	if w.Status.ObservedGeneration != 3 {
		t.Errorf("status.observedGeneration %d, want 3", w.Status.ObservedGeneration)
	}
	ready := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.ReadyCondition)
	if ready.Status != metav1.ConditionUnknown || ready.Reason != polykubev1alpha1.ReasonSuspended || ready.ObservedGeneration != 3 {
		t.Errorf("Ready after MarkSuspended: %+v", ready)
	}
	if a := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.AllocatedCondition); a == nil || a.Status != metav1.ConditionTrue {
		t.Errorf("MarkSuspended changed another condition: %+v", a)
	}
	Handled(w, &w.Status.LastHandledReconcileAt)
	if w.Status.LastHandledReconcileAt != "t1" {
		t.Errorf("lastHandledReconcileAt %q, want t1", w.Status.LastHandledReconcileAt)
	}
	w.Annotations = nil
	Handled(w, &w.Status.LastHandledReconcileAt)
	if w.Status.LastHandledReconcileAt != "t1" {
		t.Errorf("without a request the last handled one is kept; got %q", w.Status.LastHandledReconcileAt)
	}
}
