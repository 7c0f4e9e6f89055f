// Package serviceendpoint reconciles ServiceEndpoints: in every member cluster, a ClusterIP
// Service of the same name and namespace, selecting the referenced Workload's pods and annotated
// as a Cilium ClusterMesh global service. The Service exists even where the Workload runs no
// replica or does not exist, because ClusterMesh merges the backends of Services that have the
// same name and namespace in each cluster.
//
// The reconciler never adopts or changes a Service it did not create, and deletes nothing: the
// garbage collector removes the Service through its owner reference when the ServiceEndpoint
// is deleted.
package serviceendpoint

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/operator/internal/metrics"
	"github.com/polykube/polykube/operator/internal/ownmember"
	"github.com/polykube/polykube/operator/internal/statusfinal"
	"github.com/polykube/polykube/operator/internal/suspend"
	"github.com/polykube/polykube/placement"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "serviceendpoint"

const (
	// eventAction is the events.k8s.io action of every event this package emits.
	eventAction = "ReconcileService"
	// staleRetryInterval is how soon a reconcile that acted on an outdated cached object runs
	// again, should the watch event that brings the newer one not trigger it first.
	staleRetryInterval = time.Second
)

// +kubebuilder:rbac:groups=polykube.kismet.io,resources=serviceendpoints,verbs=get;list;watch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=serviceendpoints/status,verbs=patch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=serviceendpoints/finalizers,verbs=update
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles ServiceEndpoints.
type Reconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	// ClusterName is the operator's --cluster-name, written into the Service's cluster label.
	ClusterName string
	// Foreign holds the Services Polykube did not make, as metadata (foreign.go); nil reads
	// them through Client.
	Foreign cache.Cache

	finalOnce sync.Once
	final     *statusfinal.Finalizer
}

// SetupWithManager registers the controller. Besides ServiceEndpoints it watches Services and
// EndpointSlices of the same name (to restore a changed Service, to create it once a foreign
// one is gone, and to count endpoints) and Workloads (whose existence and targets the Ready
// condition reports).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ClusterName == "" {
		return errors.New("serviceendpoint reconciler: the cluster name is empty: start the operator with --cluster-name set to this cluster's ClusterMember name")
	}
	// The endpoints counted are those of the Service's own slices: found through this index,
	// not by matching every slice of the namespace, the peers' mirrored ones included (O(F·C)
	// per reconcile, F global Services with a slice per peer each).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &discoveryv1.EndpointSlice{}, LocalSliceIndex, LocalSliceService); err != nil {
		return fmt.Errorf("set up the ServiceEndpoint controller: index the EndpointSlices by Service: %w", err)
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&polykubev1alpha1.ServiceEndpoint{}).
		Watches(&corev1.Service{}, handler.EnqueueRequestsFromMapFunc(r.sameName)).
		// A peer's mirrored slice changes no count here: a flap of a peer's endpoint is no
		// reconcile of the ServiceEndpoint.
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.forEndpointSlice), builder.WithPredicates(localSlice, notInInitialList)).
		Watches(&polykubev1alpha1.Workload{}, handler.EnqueueRequestsFromMapFunc(r.forWorkload),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	err := r.watchForeign(b).Complete(r)
	if err != nil {
		return fmt.Errorf("set up the ServiceEndpoint controller: %w", err)
	}
	return nil
}

// LocalSliceIndex is the cache index of this cluster's own EndpointSlices (not those Cilium
// mirrors from peers) by the name of their Service (LocalSliceService).
const LocalSliceIndex = "polykube.kismet.io/local-slice-of"

// LocalSliceService is the index value of an EndpointSlice under LocalSliceIndex: the name of
// its Service unless Cilium mirrored it from a peer (CountReadyEndpoints skips those). A fake
// client in tests needs it registered with WithIndex.
func LocalSliceService(o client.Object) []string {
	l := o.GetLabels()
	if mirrored(o) || l[discoveryv1.LabelServiceName] == "" {
		return nil
	}
	return []string{l[discoveryv1.LabelServiceName]}
}

// mirrored reports whether Cilium mirrored the EndpointSlice from a peer.
func mirrored(o client.Object) bool {
	return o.GetLabels()[discoveryv1.LabelManagedBy] == meshview.ManagedBy
}

// localSlice passes the events of this cluster's own EndpointSlices only.
var localSlice = predicate.NewPredicateFuncs(func(o client.Object) bool { return !mirrored(o) })

// notInInitialList drops the creation events of the cache's initial list: every
// ServiceEndpoint is reconciled on start-up anyway.
var notInInitialList = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
}

// sameName maps a Service to the ServiceEndpoint of the same name, if there is one.
func (r *Reconciler) sameName(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.ifExists(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: obj.GetName()})
}

// forEndpointSlice maps an EndpointSlice to the ServiceEndpoint named like its Service.
func (r *Reconciler) forEndpointSlice(ctx context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	return r.ifExists(ctx, client.ObjectKey{Namespace: obj.GetNamespace(), Name: name})
}

func (r *Reconciler) ifExists(ctx context.Context, key client.ObjectKey) []reconcile.Request {
	if err := r.Get(ctx, key, &polykubev1alpha1.ServiceEndpoint{}); err != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: key}}
}

// forWorkload maps a Workload to the ServiceEndpoints of its namespace that reference it.
func (r *Reconciler) forWorkload(ctx context.Context, obj client.Object) []reconcile.Request {
	var list polykubev1alpha1.ServiceEndpointList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing ServiceEndpoints to re-check after a Workload changed")
		return nil
	}
	var reqs []reconcile.Request
	for _, se := range list.Items {
		if se.Spec.WorkloadRef.Name == obj.GetName() {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&se)})
		}
	}
	return reqs
}

// Reconcile makes the Service match the ServiceEndpoint and reports it in the status, which is
// written only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	se := &polykubev1alpha1.ServiceEndpoint{}
	if err := r.Get(ctx, req.NamespacedName, se); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !se.DeletionTimestamp.IsZero() {
		// The garbage collector deletes the Service through its owner reference.
		return ctrl.Result{}, nil
	}
	if se.Spec.Suspend {
		before := se.DeepCopy()
		suspend.MarkSuspended(&se.Status.ObservedGeneration, &se.Status.Conditions, se.Generation, "ServiceEndpoint")
		suspend.Handled(se, &se.Status.LastHandledReconcileAt)
		return r.finalizer().Finalize(ctx, before, se, ctrl.Result{}, nil)
	}

	obs, stale := r.observe(ctx, se)
	if stale {
		// The cache is behind a Service this reconcile raced with; the event that follows
		// reconciles again. Nothing was learned, so nothing is written.
		return ctrl.Result{RequeueAfter: staleRetryInterval}, nil
	}
	before := se.DeepCopy()
	setStatus(se, obs)
	suspend.Handled(se, &se.Status.LastHandledReconcileAt)
	if obs.Err != nil {
		metrics.ReconcileError(ControllerName, polykubev1alpha1.ReasonReconcileFailed)
	}
	return r.finalizer().Finalize(ctx, before, se, ctrl.Result{}, obs.Err)
}

// finalizer is the status policy shared by every Polykube reconciler (operator/internal/statusfinal).
// The Ready condition computed from the observation already carries an API error; a new
// ServiceEndpoint that is plainly ready gets no event.
func (r *Reconciler) finalizer() *statusfinal.Finalizer {
	r.finalOnce.Do(func() {
		r.final = &statusfinal.Finalizer{
			Client: r.Client, Recorder: r.Recorder, Kind: "ServiceEndpoint", Action: eventAction,
			StaleRetry: staleRetryInterval,
			NoEvent: func(prev *metav1.Condition, c metav1.Condition) bool {
				var previous []metav1.Condition
				if prev != nil {
					previous = []metav1.Condition{*prev}
				}
				return !isTransition(previous, c) || c.Reason == polykubev1alpha1.ReasonSuspended
			},
			OnError: func(statusfinal.Object, error) {},
		}
	})
	return r.final
}

// observe looks up the Workload, creates or updates the Service and counts its endpoints.
// stale is true when the cached Service was outdated: created or changed by someone else
// between the cached read and the write.
func (r *Reconciler) observe(ctx context.Context, se *polykubev1alpha1.ServiceEndpoint) (obs Observation, stale bool) {
	obs = Observation{
		Service:  client.ObjectKeyFromObject(se).String(),
		Settings: SettingsOf(se.Spec),
		Workload: se.Spec.WorkloadRef.Name,
		Cluster:  r.ClusterName,
	}

	wl := &polykubev1alpha1.Workload{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: se.Namespace, Name: se.Spec.WorkloadRef.Name}, wl); {
	case apierrors.IsNotFound(err):
	case err != nil:
		obs.Err = fmt.Errorf("get Workload %s/%s: %w", se.Namespace, se.Spec.WorkloadRef.Name, err)
		return obs, false
	default:
		obs.WorkloadFound = true
		// A terminating own member is left out of the targets labels select, while the Workload
		// keeps running here: say so rather than NotTargeted. An absent one changes nothing in
		// the report (the roster may still be arriving; the Service is wanted either way).
		if member, reason, msg, err := ownmember.Get(ctx, r.Client, r.ClusterName); err != nil {
			obs.Err = err
			return obs, false
		} else if member == nil && reason == polykubev1alpha1.ReasonClusterMemberTerminating {
			obs.MemberReason, obs.MemberMessage = reason, msg
		}
		var roster []polykubev1alpha1.ClusterMember
		if placement.UsesRoster(wl) {
			list := &polykubev1alpha1.ClusterMemberList{}
			// Only read (placement is pure): the cache's objects, not a deep copy of every member.
			if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
				obs.Err = fmt.Errorf("list ClusterMembers to resolve the targets of Workload %s/%s: %w", se.Namespace, wl.Name, err)
				return obs, false
			}
			roster = list.Items
		}
		// The targets are resolved once, for both the report and the allocation.
		if spec, err := placement.SpecFromWorkloadIn(wl, roster); err == nil {
			obs.Targeted = slices.ContainsFunc(spec.Targets, func(t placement.Target) bool { return t.Cluster == r.ClusterName })
			if alloc, err := placement.ForWorkloadSpec(wl, spec); err == nil {
				if n, ok := alloc.For(r.ClusterName); ok {
					obs.LocalReplicas = &n
				}
			}
		}
		obs.SyncEndpointSlices = wl.Spec.Distribution.Failover != nil && obs.Settings.Global
	}

	conflict, err := r.applyService(ctx, se, obs.SyncEndpointSlices)
	switch {
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return obs, true
	case err != nil:
		obs.Err = err
		return obs, false
	case conflict != "":
		obs.Conflict = conflict
		return obs, false
	}

	// The Service's own slices only, through the index (the peers' mirrored ones are not
	// counted), and only read: no deep copy.
	var endpointSlices discoveryv1.EndpointSliceList
	if err := r.List(ctx, &endpointSlices, client.InNamespace(se.Namespace),
		client.MatchingFields{LocalSliceIndex: se.Name}, client.UnsafeDisableDeepCopy); err != nil {
		obs.Err = fmt.Errorf("list EndpointSlices of Service %s: %w", obs.Service, err)
		return obs, false
	}
	obs.ReadyEndpoints = CountReadyEndpoints(endpointSlices.Items)
	return obs, false
}

// applyService creates the Service or patches the fields that differ from the spec. It returns
// a description of the owner when a Service of that name exists that this ServiceEndpoint did
// not create; that Service is not touched.
// With syncSlices (the Workload has failover on) the Service also asks Cilium to mirror the
// peers' endpoints (SyncEndpointSlices).
func (r *Reconciler) applyService(ctx context.Context, se *polykubev1alpha1.ServiceEndpoint, syncSlices bool) (conflict string, err error) {
	want := DesiredService(se, r.ClusterName)
	if syncSlices {
		SyncEndpointSlices(want)
	}
	if err := controllerutil.SetControllerReference(se, want, r.Scheme); err != nil {
		return "", fmt.Errorf("set the owner reference of Service %s/%s: %w", want.Namespace, want.Name, err)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("service", client.ObjectKeyFromObject(want))

	existing := &corev1.Service{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(want), existing); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", fmt.Errorf("get Service %s/%s: %w", want.Namespace, want.Name, err)
		}
		if owner, err := r.foreignOwner(ctx, client.ObjectKeyFromObject(want)); err != nil || owner != "" {
			return owner, err
		}
		log.Info("Creating Service", "settings", SettingsOf(se.Spec).String())
		if err := r.Create(ctx, want); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return "", err
			}
			return "", fmt.Errorf("create Service %s/%s: %w", want.Namespace, want.Name, err)
		}
		return "", nil
	}
	if !metav1.IsControlledBy(existing, se) {
		return DescribeOwner(existing), nil
	}
	updated, changed := Reconciled(existing, want)
	if !changed {
		return "", nil
	}
	log.Info("Updating Service", "settings", SettingsOf(se.Spec).String())
	if err := r.Patch(ctx, updated, client.MergeFromWithOptions(existing, client.MergeFromWithOptimisticLock{})); err != nil {
		if apierrors.IsConflict(err) {
			return "", err
		}
		return "", fmt.Errorf("patch Service %s/%s: %w", want.Namespace, want.Name, err)
	}
	return "", nil
}

// setStatus writes the observation into the status.
func setStatus(se *polykubev1alpha1.ServiceEndpoint, obs Observation) {
	ready := ReadyCondition(obs)
	ready.ObservedGeneration = se.Generation
	se.Status.ObservedGeneration = se.Generation
	switch {
	case obs.Conflict != "":
		se.Status.ServiceName, se.Status.LocalReadyEndpoints = "", 0
	case obs.Err == nil:
		se.Status.ServiceName, se.Status.LocalReadyEndpoints = se.Name, obs.ReadyEndpoints
	}
	meta.SetStatusCondition(&se.Status.Conditions, ready)
}
