package workload

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/metrics"
	"github.com/polykube/polykube/placement"
)

// Autoscaling (decision 0008). With spec.autoscaling, a targeted cluster whose maximum is above
// 0 runs an HPA of the Workload's name for its Deployment, between its own bounds
// (placement.BoundsForWorkloadIn). The HPA owns the Deployment's spec.replicas: the operator
// sets it when it creates the Deployment (to this cluster's minimum) and, when it creates the
// HPA for a Deployment at 0 replicas (which an HPA never scales), raises it to the minimum; it
// never writes it otherwise. A cluster whose maximum is 0 runs no HPA and the operator keeps its
// Deployment at 0, as without autoscaling.

// writesReplicas says whether the operator writes the Deployment's spec.replicas: always
// without an HPA here; with one only to lift a Deployment at 0 when the HPA is (re)created, since
// an HPA leaves a target at zero replicas alone (that is how its scaling is paused).
func writesReplicas(hpaHere, hpaExists bool, current int32) bool {
	if !hpaHere {
		return true
	}
	return !hpaExists && current == 0
}

// applyHPA creates or patches this cluster's HPA when it runs one, and deletes the one it
// created when it no longer does (spec.autoscaling removed, or this cluster's maximum is 0). An
// HPA the API server refuses (metrics or behavior it rejects) is returned as an Invalid error.
func (r *Reconciler) applyHPA(ctx context.Context, wl *polykubev1alpha1.Workload, here placement.Bounds, hpaHere bool,
	existing *autoscalingv2.HorizontalPodAutoscaler) error {
	if !hpaHere {
		return r.deleteOwned(ctx, nil, nil, existing)
	}
	want := desiredHPA(wl, r.ClusterName, here)
	log := ctrl.LoggerFrom(ctx).WithValues("horizontalPodAutoscaler", client.ObjectKeyFromObject(want))
	if existing == nil {
		log.Info("Creating HorizontalPodAutoscaler", "minReplicas", here.Min, "maxReplicas", here.Max)
		if err := r.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			return errCacheBehind
		} else if err != nil {
			return fmt.Errorf("create HorizontalPodAutoscaler %s/%s: %w", want.Namespace, want.Name, err)
		}
		return nil
	}
	if hpaUpToDate(existing, want) {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = mergeMaps(updated.Labels, want.Labels)
	updated.Annotations = mergeMaps(updated.Annotations, want.Annotations)
	updated.Spec = want.Spec
	log.Info("Updating HorizontalPodAutoscaler", "minReplicas", here.Min, "maxReplicas", here.Max)
	if err := r.Patch(ctx, updated, client.MergeFrom(existing)); err != nil {
		return fmt.Errorf("patch HorizontalPodAutoscaler %s/%s: %w", want.Namespace, want.Name, err)
	}
	if hpaDrifted(existing, want) {
		metrics.Drift("HorizontalPodAutoscaler", "spec")
	}
	return nil
}

// autoscalingStatus is status.autoscaling of a targeted cluster of an autoscaled Workload.
func autoscalingStatus(here placement.Bounds, current int32) *polykubev1alpha1.AutoscalingStatus {
	return &polykubev1alpha1.AutoscalingStatus{MinReplicas: here.Min, MaxReplicas: here.Max, CurrentReplicas: current}
}
