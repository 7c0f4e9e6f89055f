package workload

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/metrics"
)

// lastWrittenReplicas is the replica count the previous reconcile gave the Deployment, read
// from the status this reconcile starts with (effective replicas under failover), or -1 when
// the status does not say (never reconciled, or an HPA scales it).
func lastWrittenReplicas(st *polykubev1alpha1.WorkloadStatus) int32 {
	switch {
	case st.ObservedGeneration == 0 || st.Autoscaling != nil:
		return -1
	case st.Failover != nil:
		return st.Failover.EffectiveReplicas
	default:
		return st.DesiredReplicas
	}
}

// driftedFields says which fields of an existing Deployment someone else changed, given what
// the operator is about to write (want, with replicas when it manages them) and what it wrote
// last time (lastReplicas, -1 when unknown). A field the operator's own intent changed is no
// drift: replicas only when the intent is the one it wrote last, the template only when the
// Deployment still carries the hash of the template it wants (so the difference is an edit).
func driftedFields(existing, want *appsv1.Deployment, manageReplicas bool, lastReplicas int32) []string {
	var fields []string
	have := ptr.Deref(existing.Spec.Replicas, 1)
	if wantReplicas := ptr.Deref(want.Spec.Replicas, 1); manageReplicas && have != wantReplicas && lastReplicas == wantReplicas {
		fields = append(fields, "replicas")
	}
	if existing.Annotations[TemplateHashAnnotation] == want.Annotations[TemplateHashAnnotation] &&
		!sameImages(existing.Spec.Template.Spec, want.Spec.Template.Spec) {
		fields = append(fields, "template")
	}
	return fields
}

// countDrift records each drifted field of the Deployment the operator is setting back.
func countDrift(existing, want *appsv1.Deployment, manageReplicas bool, lastReplicas int32) {
	for _, f := range driftedFields(existing, want, manageReplicas, lastReplicas) {
		metrics.Drift("Deployment", f)
	}
}

// hpaDrifted says whether someone else changed the bounds or the target of an HPA whose spec
// the operator's intent has not changed (it still carries the hash of the spec it wants).
func hpaDrifted(existing, want *autoscalingv2.HorizontalPodAutoscaler) bool {
	return existing.Annotations[TemplateHashAnnotation] == want.Annotations[TemplateHashAnnotation] &&
		(ptr.Deref(existing.Spec.MinReplicas, 1) != ptr.Deref(want.Spec.MinReplicas, 1) ||
			existing.Spec.MaxReplicas != want.Spec.MaxReplicas || existing.Spec.ScaleTargetRef != want.Spec.ScaleTargetRef)
}
