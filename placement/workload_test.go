package placement

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// pinnedSpecHash is SpecHash of spec(2) below, as every released operator computes it.
const pinnedSpecHash = "0e32c40674cdde699e0f05fd872d37cf"

func TestSpecHash_IsStable(t *testing.T) {
	spec := func(replicas int32) polykubev1alpha1.WorkloadSpec {
		return polykubev1alpha1.WorkloadSpec{
			Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyStatic, Targets: []polykubev1alpha1.DistributionTarget{
				{ClusterRef: "east", Replicas: i32(replicas)},
			}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"b": "2", "a": "1"}}},
		}
	}
	if a, b := SpecHash(spec(2)), SpecHash(spec(2)); a != b {
		t.Errorf("the same spec hashed twice: %s and %s", a, b)
	}
	if SpecHash(spec(2)) == SpecHash(spec(3)) {
		t.Error("different specs have the same hash")
	}
	if h := SpecHash(spec(2)); len(h) != 32 {
		t.Errorf("hash %q has %d characters, want 32", h, len(h))
	}
	// The value is what every operator writes and polykube-status compares: a change here is
	// a change of the contract between versions, so it is pinned.
	if h := SpecHash(spec(2)); h != pinnedSpecHash {
		t.Errorf("SpecHash changed: %s, was %s; operators of different versions would report SpecMismatch", h, pinnedSpecHash)
	}
}

// Suspending a Workload in one cluster changes no decision: its hash stays the one every other
// cluster writes.
func TestSpecHash_IgnoresSuspend(t *testing.T) {
	spec := polykubev1alpha1.WorkloadSpec{Distribution: polykubev1alpha1.Distribution{
		Strategy: polykubev1alpha1.StrategyStatic, Targets: []polykubev1alpha1.DistributionTarget{{ClusterRef: "east", Replicas: i32(2)}}}}
	suspended := spec
	suspended.Suspend = true
	if a, b := SpecHash(spec), SpecHash(suspended); a != b {
		t.Errorf("suspend changed the spec hash: %s, suspended %s", a, b)
	}
}
