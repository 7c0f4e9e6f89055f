package harness

import (
	"maps"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// A peer counts as pending only while the operator has a change waiting (PendingSince set),
// a pending fall to zero included; an absorbed peer with nothing waiting does not.
func TestPendingChanges(t *testing.T) {
	since := metav1.Now()
	f := &polykubev1alpha1.FailoverStatus{Peers: []polykubev1alpha1.PeerFailoverStatus{
		{Cluster: "alpha", AbsorbedReplicas: 6, Since: &since},
		{Cluster: "beta", PendingSince: &since, PendingReplicas: 1},
		{Cluster: "gamma", AbsorbedReplicas: 3, Since: &since, PendingSince: &since},
	}}
	got := pendingChanges(f)
	want := map[string]int32{"beta": 1, "gamma": 0}
	if !maps.Equal(got, want) {
		t.Fatalf("pendingChanges = %v, want %v", got, want)
	}
	if got := pendingChanges(&polykubev1alpha1.FailoverStatus{}); len(got) != 0 {
		t.Fatalf("nothing pending: got %v", got)
	}
}
