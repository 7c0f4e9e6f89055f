package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func TestDriftedFields(t *testing.T) {
	dep := func(replicas int32, hash, image string) *appsv1.Deployment {
		return &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{TemplateHashAnnotation: hash}},
			Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: image}}}}},
		}
	}
	want := dep(3, "h1", "app:1")
	for _, tc := range []struct {
		name     string
		existing *appsv1.Deployment
		manage   bool
		last     int32
		fields   []string
	}{
		{"in line", dep(3, "h1", "app:1"), true, 3, nil},
		{"scaled by hand", dep(7, "h1", "app:1"), true, 3, []string{"replicas"}},
		{"the allocation changed", dep(2, "h1", "app:1"), true, 2, nil},
		{"never reconciled", dep(7, "h1", "app:1"), true, -1, nil},
		{"an HPA scales it", dep(7, "h1", "app:1"), false, 3, nil},
		{"image set by hand", dep(3, "h1", "app:hotfix"), true, 3, []string{"template"}},
		{"the template changed in Git", dep(3, "h0", "app:0"), true, 3, nil},
		{"both by hand", dep(5, "h1", "app:hotfix"), true, 3, []string{"replicas", "template"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := driftedFields(tc.existing, want, tc.manage, tc.last)
			if len(got) != len(tc.fields) || (len(got) > 0 && got[0] != tc.fields[0]) || (len(got) > 1 && got[1] != tc.fields[1]) {
				t.Errorf("drifted fields %v, want %v", got, tc.fields)
			}
		})
	}
}

func TestLastWrittenReplicas(t *testing.T) {
	for _, tc := range []struct {
		name string
		st   polykubev1alpha1.WorkloadStatus
		want int32
	}{
		{"never reconciled", polykubev1alpha1.WorkloadStatus{DesiredReplicas: 3}, -1},
		{"allocation", polykubev1alpha1.WorkloadStatus{ObservedGeneration: 1, DesiredReplicas: 3}, 3},
		{"failover", polykubev1alpha1.WorkloadStatus{ObservedGeneration: 1, DesiredReplicas: 3,
			Failover: &polykubev1alpha1.FailoverStatus{BaseReplicas: 3, EffectiveReplicas: 5}}, 5},
		{"autoscaled", polykubev1alpha1.WorkloadStatus{ObservedGeneration: 1, DesiredReplicas: 3,
			Autoscaling: &polykubev1alpha1.AutoscalingStatus{}}, -1},
	} {
		if got := lastWrittenReplicas(&tc.st); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}
