package status

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFromCoreEvent_ReadsAsTheEventsAPIDoes: a core/v1 Event (a cluster that does not serve
// events.k8s.io) reads the same as its events.k8s.io mirror: time from the series, else the last
// timestamp; the count; the reporter from the source; the object it is about.
func TestFromCoreEvent_ReadsAsTheEventsAPIDoes(t *testing.T) {
	last := metav1.NewTime(time.Date(2026, 12, 7, 3, 0, 0, 0, time.UTC))
	series := metav1.NewMicroTime(last.Add(time.Minute))
	e := corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "web.1", Namespace: "shop"},
		InvolvedObject: corev1.ObjectReference{APIVersion: "polykube.kismet.io/v1alpha1", Kind: "Workload", Namespace: "shop", Name: "web"},
		Reason:         "Conflict", Message: "Deployment shop/web already exists", Type: corev1.EventTypeWarning,
		Source: corev1.EventSource{Component: "polykube-operator"}, LastTimestamp: last, Count: 3,
	}
	got := fromCoreEvent(e)
	if got.Time.Time != last.Time || got.Count != 3 || got.Reporter != "polykube-operator" || got.Message != e.Message ||
		got.Object != objectName("Workload", "shop", "web") || got.regarding.group != "polykube.kismet.io" {
		t.Fatalf("core event read as %+v (regarding %+v)", got.FleetEvent, got.regarding)
	}
	e.Series = &corev1.EventSeries{Count: 7, LastObservedTime: series}
	if got := fromCoreEvent(e); got.Count != 7 || !got.Time.Time.Equal(series.Time) {
		t.Fatalf("with a series: count %d at %s, want 7 at %s", got.Count, got.Time, series.Time)
	}
}
