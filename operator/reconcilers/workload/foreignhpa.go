package workload

import (
	"context"
	"fmt"
	"sort"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// An HPA that Polykube did not make (kubectl autoscale, KEDA's keda-hpa-<name>) may scale the
// Deployment of a Workload. Writing the allocation's replicas back at every reconcile would
// fight it: each HPA sync scales, each reconcile reverts, pods start and die. So while one
// targets the Deployment, the operator leaves the Deployment's replicas alone (it still applies
// the template, labels and bindings) and reports it on the Ready condition (ForeignHPA), whose
// event names the HPA and what to do. Polykube's own HPA (spec.autoscaling) is not foreign.

// foreignHPAs returns "namespace/name" of every HPA in the Workload's namespace that scales its
// Deployment and is not own (the HPA Polykube made for this Workload here; nil when none),
// sorted. It reads the cache of foreign objects (foreignnames.go), which holds every HPA's
// scaleTargetRef.
func (r *Reconciler) foreignHPAs(ctx context.Context, wl *polykubev1alpha1.Workload, own *autoscalingv2.HorizontalPodAutoscaler) ([]string, error) {
	list := &autoscalingv2.HorizontalPodAutoscalerList{}
	if err := r.others().List(ctx, list, client.InNamespace(wl.Namespace)); err != nil {
		return nil, fmt.Errorf("list HorizontalPodAutoscalers in %s to find those scaling Deployment %s: %w", wl.Namespace, wl.Name, err)
	}
	var out []string
	for i := range list.Items {
		h := &list.Items[i]
		if own != nil && h.UID == own.UID {
			continue
		}
		if h.Labels[polykubev1alpha1.ManagedByLabel] == polykubev1alpha1.ManagedByValue {
			// Polykube's, for another cluster name: reported as IdentityMismatch already.
			continue
		}
		if scalesDeployment(h, wl.Name) {
			out = append(out, h.Namespace+"/"+h.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// scalesDeployment is true when the HPA's scaleTargetRef is the Deployment named name (in the
// HPA's namespace, the only one an HPA can scale).
func scalesDeployment(h *autoscalingv2.HorizontalPodAutoscaler, name string) bool {
	ref := h.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == "apps" && ref.Kind == "Deployment" && ref.Name == name
}

// forHPA maps an HPA to the Workload of its name (the HPA Polykube makes, or one in its way) and
// to the Workload whose Deployment it scales.
func forHPA(_ context.Context, o client.Object) []reconcile.Request {
	reqs := []reconcile.Request{{NamespacedName: client.ObjectKeyFromObject(o)}}
	if h, ok := o.(*autoscalingv2.HorizontalPodAutoscaler); ok {
		if name := h.Spec.ScaleTargetRef.Name; name != "" && name != h.Name && h.Spec.ScaleTargetRef.Kind == "Deployment" {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKey{Namespace: h.Namespace, Name: name}})
		}
	}
	return reqs
}

// foreignHPAMessage is the Ready message while foreign HPAs scale the Deployment.
func foreignHPAMessage(wl *polykubev1alpha1.Workload, hpas []string, current, allocated int32, autoscaled bool) string {
	dep := wl.Namespace + "/" + wl.Name
	what := fmt.Sprintf("HorizontalPodAutoscaler %s scales", hpas[0])
	if len(hpas) > 1 {
		what = fmt.Sprintf("HorizontalPodAutoscalers %s scale", strings.Join(hpas, ", "))
	}
	if autoscaled {
		return fmt.Sprintf("%s Deployment %s and Polykube did not make it; this Workload has spec.autoscaling, so Polykube scales it with its own: "+
			"delete the HorizontalPodAutoscaler Polykube did not make", what, dep)
	}
	return fmt.Sprintf("%s Deployment %s and Polykube did not make it (kubectl autoscale, KEDA): Polykube leaves the Deployment's replicas to it "+
		"(now %d; the allocation here is %d) and applies everything else. To autoscale this Workload, add spec.autoscaling "+
		"(Polykube then runs one HPA per cluster within its share) and delete the HorizontalPodAutoscaler; to run the allocation, delete the HorizontalPodAutoscaler",
		what, dep, current, allocated)
}
