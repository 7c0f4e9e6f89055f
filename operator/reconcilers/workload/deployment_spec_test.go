package workload

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// specWorkload is a Workload whose Deployment the tests below render.
func specWorkload() *polykubev1alpha1.Workload {
	return &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop", UID: "u1"},
		Spec: polykubev1alpha1.WorkloadSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "api", Image: "example/api:1"}},
		}}},
	}
}

// TestDeploymentHash_CoversTheSpecButReplicas: a Deployment-level field the operator writes
// (one placement.Deployment may set one day, such as minReadySeconds or the strategy) changes
// the template-hash annotation, so the operator rewrites a Deployment whose field differs; the
// replicas do not (they are compared on their own, and an HPA may own them).
func TestDeploymentHash_CoversTheSpecButReplicas(t *testing.T) {
	wl := specWorkload()
	d := desiredDeployment(wl, wl.Spec.Template, "aws", 3, nil, nil)
	base := deploymentHash(d.Spec)

	other := d.Spec.DeepCopy()
	other.Replicas = ptr.To[int32](7)
	if got := deploymentHash(*other); got != base {
		t.Errorf("the hash changed with the replicas (%s, was %s): an HPA's scaling would look like a spec change", got, base)
	}
	for name, change := range map[string]func(*appsv1.DeploymentSpec){
		"minReadySeconds":      func(s *appsv1.DeploymentSpec) { s.MinReadySeconds = 5 },
		"strategy":             func(s *appsv1.DeploymentSpec) { s.Strategy.Type = appsv1.RecreateDeploymentStrategyType },
		"revisionHistoryLimit": func(s *appsv1.DeploymentSpec) { s.RevisionHistoryLimit = ptr.To[int32](2) },
		"template":             func(s *appsv1.DeploymentSpec) { s.Template.Spec.Containers[0].Image = "example/api:2" },
	} {
		s := d.Spec.DeepCopy()
		change(s)
		if deploymentHash(*s) == base {
			t.Errorf("%s: the hash does not cover it, so a Deployment whose %s differs is never updated", name, name)
		}
	}
}

// TestUpdatedDeployment_CopiesTheWholeSpec: an update writes every field of the spec the
// operator renders, not only the template, and leaves the replicas to an HPA that owns them.
func TestUpdatedDeployment_CopiesTheWholeSpec(t *testing.T) {
	wl := specWorkload()
	existing := desiredDeployment(wl, wl.Spec.Template, "aws", 3, nil, nil)
	existing.Spec.Replicas = ptr.To[int32](5)
	existing.Labels["team"] = "shop"
	want := desiredDeployment(wl, wl.Spec.Template, "aws", 3, nil, nil)
	want.Spec.MinReadySeconds = 5
	want.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType

	got := updatedDeployment(existing, want, false)
	if got.Spec.MinReadySeconds != 5 || got.Spec.Strategy.Type != appsv1.RecreateDeploymentStrategyType {
		t.Errorf("the update left the spec's other fields behind: minReadySeconds %d, strategy %q; want 5, Recreate",
			got.Spec.MinReadySeconds, got.Spec.Strategy.Type)
	}
	if r := ptr.Deref(got.Spec.Replicas, 0); r != 5 {
		t.Errorf("replicas %d without manageReplicas; want the existing 5 (an HPA owns them)", r)
	}
	if got.Labels["team"] != "shop" {
		t.Errorf("the update dropped a label someone else added: %v", got.Labels)
	}
	if r := ptr.Deref(updatedDeployment(existing, want, true).Spec.Replicas, 0); r != 3 {
		t.Errorf("replicas %d with manageReplicas; want the rendered 3", r)
	}
}
