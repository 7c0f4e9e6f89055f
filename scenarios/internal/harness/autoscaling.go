package harness

import (
	"context"
	"fmt"
	"strings"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Autoscaled Workloads (decision 0008): what features/autoscaling.feature sets up and checks.

// DefineAutoscaledWorkload builds a MultiCloudWeighted Workload like DefineWorkload whose
// fleet-wide minimum and maximum are split by the targets' weights.
func (sc *Scenario) DefineAutoscaledWorkload(name string, minimum, maximum int32, targets []Target) *polykubev1alpha1.Workload {
	w := sc.DefineWorkload(name, "MultiCloudWeighted", nil, targets)
	w.Spec.Autoscaling = &polykubev1alpha1.Autoscaling{MinReplicas: &minimum, MaxReplicas: &maximum}
	return w
}

// Bounds are an HPA's minimum and maximum.
type Bounds struct{ Min, Max int32 }

// AwaitHPABounds waits until each named cluster holds an HPA of the Workload's name, made by
// that cluster's operator for its Deployment, with the given bounds.
func (sc *Scenario) AwaitHPABounds(ctx context.Context, workload string, want map[string]Bounds) error {
	clusters := sortedKeys(want)
	parts := make([]string, 0, len(clusters))
	for _, cl := range clusters {
		parts = append(parts, fmt.Sprintf("%s=%d..%d", cl, want[cl].Min, want[cl].Max))
	}
	what := fmt.Sprintf("the HPAs of %q to scale between %s", workload, strings.Join(parts, " "))
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, clusters, func(ctx context.Context, cl string, c client.Client) error {
			w, err := sc.workloadProcessed(ctx, cl, c, workload)
			if err != nil {
				return err
			}
			var hpa autoscalingv2.HorizontalPodAutoscaler
			if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, &hpa); err != nil {
				return fmt.Errorf("get HorizontalPodAutoscaler %s: %w", workload, err)
			}
			var problems []string
			if owner := metav1.GetControllerOf(&hpa); owner == nil || owner.Kind != "Workload" || owner.UID != w.UID {
				problems = append(problems, fmt.Sprintf("controller owner %v, want this cluster's Workload %s", owner, workload))
			}
			if ref := hpa.Spec.ScaleTargetRef; ref.Kind != "Deployment" || ref.Name != workload {
				problems = append(problems, fmt.Sprintf("scales %s %s, want Deployment %s", ref.Kind, ref.Name, workload))
			}
			if got := ptrOr(hpa.Spec.MinReplicas, 1); got != want[cl].Min || hpa.Spec.MaxReplicas != want[cl].Max {
				problems = append(problems, fmt.Sprintf("bounds %d..%d", got, hpa.Spec.MaxReplicas))
			}
			if len(problems) > 0 {
				return fmt.Errorf("HorizontalPodAutoscaler %s: %s", workload, strings.Join(problems, ", "))
			}
			return nil
		})
	})
}

// ScaleByHand sets the replicas of the cluster's Deployment of the Workload through its scale
// subresource, as `kubectl scale` does.
func (sc *Scenario) ScaleByHand(ctx context.Context, workload, cluster string, replicas int32) error {
	return sc.forEachCluster(ctx, []string{cluster}, func(ctx context.Context, cl string, c client.Client) error {
		d, err := sc.observe(ctx, cl, c, workload)
		if err != nil {
			return err
		}
		if d == nil {
			return fmt.Errorf("no Deployment for Workload %q to scale", workload)
		}
		scale := &autoscalingv1.Scale{Spec: autoscalingv1.ScaleSpec{Replicas: replicas}}
		if err := c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale)); err != nil {
			return fmt.Errorf("scale Deployment %s to %d: %w", d.Name, replicas, err)
		}
		return nil
	})
}
