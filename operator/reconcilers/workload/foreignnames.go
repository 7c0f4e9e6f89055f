package workload

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/unmanaged"
)

// The manager's cache holds only the Deployments, Services and HPAs Polykube manages
// (setup.ManagedSelector); what the reconciler must know of the others comes from the cache of
// foreign objects (operator/internal/unmanaged): whether one holds a Workload's name, and which
// HPAs scale its Deployment.

// others reads the objects Polykube did not make: the foreign cache, or, when the reconciler
// runs without one (unit tests on a fake client, which holds everything), the client.
func (r *Reconciler) others() client.Reader {
	if r.Foreign != nil {
		return r.Foreign
	}
	return r.Client
}

// foreignHolds reports whether an object Polykube did not make holds key's name. obj is an
// empty object of the kind to check, in the form the foreign cache holds it
// (unmanaged.Deployment(), unmanaged.Service(), an HPA). Objects labelled as Polykube's are the
// manager's cache's to report (ownershipOf), so they do not count here.
func (r *Reconciler) foreignHolds(ctx context.Context, obj client.Object, key client.ObjectKey) (bool, error) {
	if err := r.others().Get(ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("check whether %s %s exists that Polykube did not make: %w", kindOfForeign(obj), key, err)
	}
	return !unmanaged.Managed(obj), nil
}

// kindOfForeign names the kind of an object of the foreign cache, for messages.
func kindOfForeign(obj client.Object) string {
	if m, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return m.Kind
	}
	return kindOf(obj)
}

// watchForeign adds the foreign cache's watches: a foreign Deployment, Service or HPA that
// appears or goes re-checks the Workload whose name it takes or frees, and a foreign HPA also
// the Workload whose Deployment it scales (or scaled). Only Workloads that exist are enqueued,
// so the cluster's other objects cause no reconcile.
func (r *Reconciler) watchForeign(b *builder.Builder) *builder.Builder {
	if r.Foreign == nil {
		return b
	}
	named := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
		return r.existingWorkloads(ctx, client.ObjectKeyFromObject(o))
	})
	scaling := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, h *autoscalingv2.HorizontalPodAutoscaler) []reconcile.Request {
		var keys []client.ObjectKey
		for _, req := range forHPA(ctx, h) {
			keys = append(keys, req.NamespacedName)
		}
		return r.existingWorkloads(ctx, keys...)
	})
	return b.
		WatchesRawSource(source.Kind(r.Foreign, unmanaged.Deployment(), named, unmanaged.NameTakenOrFreed[*metav1.PartialObjectMetadata]())).
		WatchesRawSource(source.Kind(r.Foreign, unmanaged.Service(), named, unmanaged.NameTakenOrFreed[*metav1.PartialObjectMetadata]())).
		WatchesRawSource(source.Kind(r.Foreign, &autoscalingv2.HorizontalPodAutoscaler{}, scaling,
			unmanaged.NameTakenOrFreed[*autoscalingv2.HorizontalPodAutoscaler]()))
}

// existingWorkloads returns a request for each key that names a Workload in the cache.
func (r *Reconciler) existingWorkloads(ctx context.Context, keys ...client.ObjectKey) []reconcile.Request {
	var reqs []reconcile.Request
	for _, key := range keys {
		if err := r.Get(ctx, key, &polykubev1alpha1.Workload{}); err == nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: key})
		}
	}
	return reqs
}
