package setup

import (
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// ManagedSelector selects the objects Polykube manages: every Deployment, Service and
// HorizontalPodAutoscaler the operator ever created carries app.kubernetes.io/managed-by=polykube
// (since the first release), and so do the EndpointSlices of its Services, local and mirrored:
// Kubernetes' EndpointSlice controller copies a Service's labels onto its slices, and Cilium's
// mirror copies the local Service's labels onto the slices it mirrors from peers
// (pkg/clustermesh/endpointslicesync; testbed/meshmirror does the same).
func ManagedSelector() labels.Selector {
	return labels.SelectorFromSet(labels.Set{polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue})
}

// managedOnly confines the manager's cache of the kinds every cluster has many of to the
// objects Polykube manages: the operator's memory and its reconciles then follow its own
// objects, not the cluster's (issue 40). What it must know of the others (a name in the way, an
// HPA scaling a Workload's Deployment) comes from a separate, metadata-only cache
// (operator/internal/unmanaged).
func managedOnly() map[client.Object]cache.ByObject {
	managed := cache.ByObject{Label: ManagedSelector()}
	return map[client.Object]cache.ByObject{
		&appsv1.Deployment{}:                     managed,
		&corev1.Service{}:                        managed,
		&autoscalingv2.HorizontalPodAutoscaler{}: managed,
		&discoveryv1.EndpointSlice{}:             managed,
	}
}
