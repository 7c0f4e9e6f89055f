// Package unmanaged is what the operator sees of the Deployments, Services and
// HorizontalPodAutoscalers it did not make.
//
// The manager's cache holds only the objects Polykube manages: those of these kinds (and the
// EndpointSlices) labelled app.kubernetes.io/managed-by=polykube, which every object the
// operator ever created carries (setup.ManagedSelector). A cluster's other Deployments and
// Services, often thousands, then cost the operator neither memory nor reconciles. Two checks
// still need to see them:
//   - a name in the way: Polykube never adopts an object it did not make, so a Deployment,
//     Service or HPA of a Workload's name (or a Service of a ServiceEndpoint's name) that it did
//     not make is a Conflict, and the Workload must learn at once when that object goes away;
//   - an HPA Polykube did not make that scales a Workload's Deployment (kubectl autoscale,
//     KEDA): the operator leaves the replicas to it (workload/foreignhpa.go).
//
// This package's cache answers both with as little as the checks read, and only for the objects
// without Polykube's label (NotManaged, filtered by the API server): of each Deployment and
// Service, metadata only (PartialObjectMetadata: the API server sends no spec or status), cut
// down to the identity (Identity: name, namespace, UID, the managed-by label, the controller
// reference); of every HPA, that identity and its scaleTargetRef. An object costs a few
// hundred bytes instead of its whole spec and status, and events that change nothing the
// checks read are dropped before any reconcile (NameTakenOrFreed).
//
// A live read instead of this cache was weighed: a GET before each create would add a request
// per new Workload to the start-up path (10,000 at the scale issue 40 measures), and nothing
// would tell a Workload in Conflict that the object in its way is gone but a periodic retry.
// The cache costs memory in proportion to the cluster's foreign objects, but little of it
// (docs/architecture.md gives the measured figure), and no API request per reconcile.
package unmanaged

import (
	"context"
	"fmt"
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Deployment is the metadata-only form in which this cache holds Deployments: pass it (a new
// one each time) to Get or to a watch source.
func Deployment() *metav1.PartialObjectMetadata {
	return metadataOf(appsv1.SchemeGroupVersion.WithKind("Deployment"))
}

// Service is the metadata-only form in which this cache holds Services.
func Service() *metav1.PartialObjectMetadata {
	return metadataOf(corev1.SchemeGroupVersion.WithKind("Service"))
}

func metadataOf(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{}
	m.SetGroupVersionKind(gvk)
	return m
}

// Managed reports whether obj carries the label of the objects Polykube makes. Those are in the
// manager's cache in full; this cache's copy of them is never what a check needs.
func Managed(obj client.Object) bool {
	return obj.GetLabels()[polykubev1alpha1.ManagedByLabel] == polykubev1alpha1.ManagedByValue
}

// Identity cuts obj's metadata down to what the checks read: name, namespace, UID,
// resourceVersion, deletion timestamp, the managed-by label and the controller reference.
// Annotations (kubectl's last-applied-configuration is a copy of the whole object), managed
// fields, other labels and owners are dropped.
func Identity(m *metav1.ObjectMeta) {
	out := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		DeletionTimestamp: m.DeletionTimestamp,
	}
	if v, ok := m.Labels[polykubev1alpha1.ManagedByLabel]; ok {
		out.Labels = map[string]string{polykubev1alpha1.ManagedByLabel: v}
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		out.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	*m = out
}

// Transform reduces each object before it enters the cache: Identity, and for an HPA its
// scaleTargetRef (its metrics, behavior and status are dropped). Tombstones of deleted objects
// pass unchanged.
func Transform(in any) (any, error) {
	switch o := in.(type) {
	case *metav1.PartialObjectMetadata:
		Identity(&o.ObjectMeta)
	case *autoscalingv2.HorizontalPodAutoscaler:
		Identity(&o.ObjectMeta)
		o.Spec = autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: o.Spec.ScaleTargetRef}
		o.Status = autoscalingv2.HorizontalPodAutoscalerStatus{}
	}
	return in, nil
}

// NotManaged selects the objects that do not carry Polykube's label (without the label, or
// with another value): the complement of the manager's cache (setup.ManagedSelector).
func NotManaged() labels.Selector {
	req, err := labels.NewRequirement(polykubev1alpha1.ManagedByLabel, selection.NotEquals, []string{polykubev1alpha1.ManagedByValue})
	if err != nil {
		panic(fmt.Sprintf("the managed-by label requirement is invalid: %v", err)) // constants: cannot happen
	}
	return labels.NewSelector().Add(*req)
}

// NewCache returns the cache of foreign objects, with the manager's HTTP client, scheme and
// REST mapper in o. Add it to the manager with mgr.Add(AsManagerCache(c)).
//
// It lists and watches only what NotManaged selects: the API server filters Polykube's own
// objects out, which the manager's cache holds in full anyway. Without the selector every
// Deployment (and HPA) the operator creates would also be listed at start-up, sent as a watch
// event, decoded and kept here, and each reconcile of an autoscaled Workload would copy its
// namespace's Polykube HPAs (foreignHPAs): O(W) per Workload at W Workloads. An object whose
// label is removed by hand enters this cache (the watch sends it as added), as an object in a
// Workload's way must.
func NewCache(cfg *rest.Config, o cache.Options) (cache.Cache, error) {
	o.DefaultTransform = Transform
	o.DefaultLabelSelector = NotManaged()
	c, err := cache.New(cfg, o)
	if err != nil {
		return nil, fmt.Errorf("create the cache of the objects Polykube did not make: %w", err)
	}
	return c, nil
}

// managerCache makes the manager start this cache with its own, before any controller, and wait
// until it has synced (the manager's "caches" group takes what has a GetCache method).
type managerCache struct{ cache.Cache }

func (m managerCache) GetCache() cache.Cache { return m.Cache }

// AsManagerCache is c as a runnable the manager starts with its own cache.
func AsManagerCache(c cache.Cache) interface {
	Start(context.Context) error
	GetCache() cache.Cache
} {
	return managerCache{c}
}

// NameTakenOrFreed passes the events that can change a check's answer: an object Polykube did
// not make appearing (a name taken) or going (a name freed). Its updates pass only when the
// reduced copy changed (an HPA's scaleTargetRef, the managed-by label, the controller); the
// status churn of other controllers' objects reaches the cache as a new resourceVersion and no
// further. The initial list is no news: every Workload is reconciled on start-up anyway.
// Objects labelled as Polykube's are left to the manager's cache, which watches them in full.
func NameTakenOrFreed[T client.Object]() predicate.TypedPredicate[T] {
	return predicate.TypedFuncs[T]{
		CreateFunc: func(e event.TypedCreateEvent[T]) bool { return !e.IsInInitialList && !Managed(e.Object) },
		DeleteFunc: func(e event.TypedDeleteEvent[T]) bool { return !Managed(e.Object) },
		UpdateFunc: func(e event.TypedUpdateEvent[T]) bool {
			if Managed(e.ObjectOld) && Managed(e.ObjectNew) {
				return false
			}
			return changedBeyondVersion(e.ObjectOld, e.ObjectNew)
		},
		GenericFunc: func(event.TypedGenericEvent[T]) bool { return false },
	}
}

// changedBeyondVersion reports whether two reduced copies of an object differ in more than
// their resourceVersion.
func changedBeyondVersion(before, after client.Object) bool {
	if !maps.Equal(before.GetLabels(), after.GetLabels()) ||
		!apiequality.Semantic.DeepEqual(before.GetOwnerReferences(), after.GetOwnerReferences()) ||
		!before.GetDeletionTimestamp().Equal(after.GetDeletionTimestamp()) {
		return true
	}
	o, okOld := before.(*autoscalingv2.HorizontalPodAutoscaler)
	n, okNew := after.(*autoscalingv2.HorizontalPodAutoscaler)
	return okOld && okNew && o.Spec.ScaleTargetRef != n.Spec.ScaleTargetRef
}
