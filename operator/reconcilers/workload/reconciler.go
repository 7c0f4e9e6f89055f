// Package workload reconciles Workloads: from the spec's distribution it computes every
// target's replicas (placement), runs this cluster's share as a local Deployment (and
// a ClusterIP Service when ports are declared), wires DatastoreBindings into the pod template as
// secretKeyRef env vars, and reports the local slice in the Workload's status.
package workload

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/operator/internal/metrics"
	"github.com/polykube/polykube/operator/internal/statusfinal"
	"github.com/polykube/polykube/operator/internal/suspend"
	"github.com/polykube/polykube/placement"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "workload"

// DefaultSecretRecheckInterval is how often a Workload with a DatastoreBinding whose Secret or
// keys are missing is reconciled again: Secrets cannot be watched (RBAC grants only get).
const DefaultSecretRecheckInterval = 30 * time.Second

// +kubebuilder:rbac:groups=polykube.kismet.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=workloads/status,verbs=patch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=workloads/finalizers,verbs=update
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=clustermembers,verbs=get;list;watch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=datastorebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=serviceendpoints,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles Workloads in the cluster named ClusterName.
type Reconciler struct {
	client.Client
	Scheme      *runtime.Scheme
	Recorder    events.EventRecorder
	ClusterName string
	// Foreign holds the Deployments, Services and HPAs Polykube did not make, reduced to what
	// the checks read (foreignnames.go); nil reads them through Client.
	Foreign cache.Cache

	// SecretRecheckInterval overrides DefaultSecretRecheckInterval when set.
	SecretRecheckInterval time.Duration
	// MaxConcurrentReconciles is the number of Workloads reconciled in parallel (default 1).
	MaxConcurrentReconciles int
	// Now returns the current time (tests set it); defaults to time.Now.
	Now func() time.Time

	finalOnce sync.Once
	final     *statusfinal.Finalizer
	// roster is the ClusterMembers, copied once per change of the cache (roster.go).
	roster roster
}

// SetupWithManager registers the controller. The Deployments, Services and
// HorizontalPodAutoscalers Polykube manages are mapped to the Workload of the same name whether
// or not they are owned by it (which covers what Owns would, since every object the Workload
// owns has its name); those it did not make come from the cache of foreign objects, and only
// when they take or free the name of a Workload that exists (foreignnames.go), so that a
// conflicting object that goes away is noticed. An HPA also maps to the Workload whose
// Deployment it scales (one Polykube did not make takes the replicas over), and only when its
// spec, labels or owners change, not on the status its controller keeps writing. This
// cluster's ClusterMember maps to every Workload (the operator's identity may appear late),
// every other one to the Workloads with targetSelectors (the roster they select from) or whose
// targets name it; DatastoreBindings map to the Workload they reference.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ClusterName == "" {
		return errors.New("workload reconciler: ClusterName is empty; start the operator with --cluster-name")
	}
	// The failover step reads one Service's mirrored slices: through this index, those alone,
	// not every slice of the namespace matched against a selector (that was O(F·C) per
	// reconcile, F failover Services with a slice per peer each).
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &discoveryv1.EndpointSlice{}, MirroredSliceIndex, MirroredSliceService); err != nil {
		return fmt.Errorf("workload reconciler: index the mirrored EndpointSlices by Service: %w", err)
	}
	// The roster is read from the ClusterMember informer's store (roster.go).
	informer, err := mgr.GetCache().GetInformer(context.Background(), &polykubev1alpha1.ClusterMember{})
	if err != nil {
		return fmt.Errorf("workload reconciler: the ClusterMember informer: %w", err)
	}
	if i, ok := informer.(toolscache.SharedIndexInformer); ok {
		r.roster.store = i.GetStore()
	}
	sameName := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}}}
	})
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&polykubev1alpha1.Workload{}, builder.WithPredicates(suspend.RequestedOrGenerationChanged())).
		Watches(&appsv1.Deployment{}, sameName, builder.WithPredicates(notOwnCreation)).
		Watches(&corev1.Service{}, sameName, builder.WithPredicates(notOwnCreation)).
		Watches(&autoscalingv2.HorizontalPodAutoscaler{}, handler.EnqueueRequestsFromMapFunc(forHPA),
			builder.WithPredicates(notOwnCreation, hpaSpecOrOwnershipChanged)).
		Watches(&polykubev1alpha1.DatastoreBinding{}, handler.EnqueueRequestsFromMapFunc(
			func(_ context.Context, o client.Object) []reconcile.Request {
				b := o.(*polykubev1alpha1.DatastoreBinding)
				return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.WorkloadRef.Name}}}
			}), builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&polykubev1alpha1.ServiceEndpoint{}, handler.EnqueueRequestsFromMapFunc(forServiceEndpoint),
			builder.WithPredicates(serviceEndpointSignalChanged)).
		Watches(&discoveryv1.EndpointSlice{}, handler.EnqueueRequestsFromMapFunc(r.forEndpointSlice),
			builder.WithPredicates(mirroredSlice, notInInitialList)).
		Watches(&polykubev1alpha1.ClusterMember{}, handler.EnqueueRequestsFromMapFunc(r.workloadsAfterMemberChange),
			builder.WithPredicates(memberAppearsChangesOrGoes))
	return r.watchForeign(b).
		WithOptions(controller.Options{MaxConcurrentReconciles: max(r.MaxConcurrentReconciles, 1)}).
		Complete(r)
}

// forServiceEndpoint maps a ServiceEndpoint to the Workload of its name (whose Service it may
// provide) and to the Workload it references (whose failover reads its Service's slices).
func forServiceEndpoint(_ context.Context, o client.Object) []reconcile.Request {
	se := o.(*polykubev1alpha1.ServiceEndpoint)
	reqs := []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: se.Namespace, Name: se.Name}}}
	if ref := se.Spec.WorkloadRef.Name; ref != "" && ref != se.Name {
		reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: se.Namespace, Name: ref}})
	}
	return reqs
}

// mirroredSlice passes only the EndpointSlices Cilium mirrors from peers: the local ones change
// with every pod and say nothing about the peers.
var mirroredSlice = predicate.NewPredicateFuncs(func(o client.Object) bool {
	return o.GetLabels()[discoveryv1.LabelManagedBy] == meshview.ManagedBy
})

// MirroredSliceIndex is the cache index of the EndpointSlices Cilium mirrors from peers, by the
// name of their Service (MirroredSliceService).
const MirroredSliceIndex = "polykube.kismet.io/mirrored-slice-of"

// MirroredSliceService is the index value of an EndpointSlice under MirroredSliceIndex: the
// name of its Service when Cilium mirrored it from a peer (the slices meshview.Selector
// selects), none otherwise. A fake client in tests needs it registered with WithIndex.
func MirroredSliceService(o client.Object) []string {
	l := o.GetLabels()
	if l[discoveryv1.LabelManagedBy] != meshview.ManagedBy || l[discoveryv1.LabelServiceName] == "" {
		return nil
	}
	return []string{l[discoveryv1.LabelServiceName]}
}

// notInInitialList drops the creation events of the cache's initial list: every Workload is
// reconciled on start-up anyway, and at 511 members the peers' mirrored slices are one event
// each (10,200 at W = 200), each mapped to its Workload through a read of the cache.
var notInInitialList = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
}

// notOwnCreation drops the creation events of the Deployments and Services the operator
// creates: the reconcile that created one already knows about it (and on start-up, every
// Workload is reconciled anyway). Re-running it right away would read a Workload the cache may
// not have updated yet and write its status a second time.
var notOwnCreation = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool {
		return e.Object.GetLabels()[polykubev1alpha1.ManagedByLabel] != polykubev1alpha1.ManagedByValue
	},
}

// hpaSpecOrOwnershipChanged passes the updates of an HPA that change its spec, labels or owners
// (a hand edit to undo, a take-over to notice), not those of the status its controller keeps
// writing. The API server does not move an HPA's generation on a spec change, so the objects are
// compared.
var hpaSpecOrOwnershipChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*autoscalingv2.HorizontalPodAutoscaler)
		n, okNew := e.ObjectNew.(*autoscalingv2.HorizontalPodAutoscaler)
		if !okOld || !okNew {
			return true
		}
		return !apiequality.Semantic.DeepEqual(o.Spec, n.Spec) || !maps.Equal(o.Labels, n.Labels) ||
			!apiequality.Semantic.DeepEqual(o.OwnerReferences, n.OwnerReferences)
	},
}

// memberAppearsChangesOrGoes passes the creation and deletion of ClusterMembers and the changes
// of their spec. The one named after this cluster matters to every Workload (its existence, and
// the labels, provider, region and zone overrides select on); any member matters to the
// Workloads whose targetSelectors select from the roster. Status writes (the ClusterMember
// reconciler writes often) do not change the generation and are dropped: re-checking Workloads on
// each would be wasted.
var memberAppearsChangesOrGoes = predicate.Funcs{
	// In the initial list it is no news: every Workload is reconciled on start-up anyway.
	CreateFunc: func(e event.CreateEvent) bool { return !e.IsInInitialList },
	DeleteFunc: func(event.DeleteEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		return e.ObjectNew.GetGeneration() != e.ObjectOld.GetGeneration() ||
			e.ObjectNew.GetDeletionTimestamp().IsZero() != e.ObjectOld.GetDeletionTimestamp().IsZero()
	},
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// workloadsAfterMemberChange enqueues the Workloads a ClusterMember change concerns: every
// Workload when it is this cluster's own member, else those with targetSelectors and those
// whose targets name it (TargetsKnown).
func (r *Reconciler) workloadsAfterMemberChange(ctx context.Context, o client.Object) []reconcile.Request {
	own := o.GetName() == r.ClusterName
	list := &polykubev1alpha1.WorkloadList{}
	// Only their specs are read: no deep copy of every Workload per ClusterMember event.
	if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List Workloads to re-check them after a ClusterMember change", "clusterMember", o.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for i := range list.Items {
		if own || placement.UsesRoster(&list.Items[i]) || namesTarget(&list.Items[i], o.GetName()) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return reqs
}

// Reconcile fetches the Workload, runs reconcileNormal and patches the status only when it
// changed; in the steady state it makes no API write at all.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	wl := &polykubev1alpha1.Workload{}
	if err := r.Get(ctx, req.NamespacedName, wl); err != nil {
		if apierrors.IsNotFound(err) {
			metrics.ForgetWorkload(req.Namespace, req.Name)
			r.finalizer().Forget(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get Workload %s: %w", req.NamespacedName, err)
	}
	if !wl.DeletionTimestamp.IsZero() {
		// The Deployment and Service carry owner references: the garbage collector removes them.
		return ctrl.Result{}, nil
	}

	if r.finalizer().Behind(wl) {
		// The cache has not caught up with this process's last status write: the copy may carry
		// an older spec or failover state. Acting on it could scale the Deployment and, a
		// second later, back; the newer copy is on its way.
		ctrl.LoggerFrom(ctx).V(1).Info("The cached Workload is older than the last status write; reconciling again", "resourceVersion", wl.ResourceVersion)
		return ctrl.Result{RequeueAfter: statusfinal.DefaultStaleRetry}, nil
	}
	before := wl.DeepCopy()
	if wl.Spec.Suspend {
		// Only the Ready condition is written; what runs here is left as it is.
		suspend.MarkSuspended(&wl.Status.ObservedGeneration, &wl.Status.Conditions, wl.Generation, "Workload")
		suspend.Handled(wl, &wl.Status.LastHandledReconcileAt)
		return r.finalizer().Finalize(ctx, before, wl, ctrl.Result{}, nil)
	}
	result, err := r.reconcileNormal(ctx, wl)
	suspend.Handled(wl, &wl.Status.LastHandledReconcileAt)
	r.recordMetrics(wl, err)
	return r.finalizer().Finalize(ctx, before, wl, result, err)
}

// isTransitional is true for the Ready reasons every rollout passes through. They get no event:
// an event per Workload and rollout step would double the API writes of a large rollout and
// bury the events that need attention.
func isTransitional(reason string) bool {
	return reason == polykubev1alpha1.ReasonDeploymentPending || reason == polykubev1alpha1.ReasonProgressing
}

// finalizer is the status policy shared by every Polykube reconciler (operator/internal/statusfinal).
func (r *Reconciler) finalizer() *statusfinal.Finalizer {
	r.finalOnce.Do(func() {
		r.final = &statusfinal.Finalizer{
			Client: r.Client, Recorder: r.Recorder, Kind: "Workload", Action: "Reconcile",
			EventConditions: []string{polykubev1alpha1.ReadyCondition, polykubev1alpha1.EnvVarsUniqueCondition,
				polykubev1alpha1.SecretsReadableCondition, polykubev1alpha1.TargetsKnownCondition},
			NoEvent: func(prev *metav1.Condition, c metav1.Condition) bool {
				if c.Type != polykubev1alpha1.ReadyCondition {
					return prev == nil && c.Reason == polykubev1alpha1.ReasonSucceeded
				}
				return isTransitional(c.Reason) || c.Reason == polykubev1alpha1.ReasonSuspended
			},
		}
	})
	return r.final
}

// recordMetrics records the reconcile's outcome: the replicas and, for an error, its reason.
func (r *Reconciler) recordMetrics(wl *polykubev1alpha1.Workload, err error) {
	reason := ""
	if ready := meta.FindStatusCondition(wl.Status.Conditions, polykubev1alpha1.ReadyCondition); ready != nil &&
		ready.Status != metav1.ConditionTrue {
		reason = ready.Reason
	}
	if err != nil && !errors.Is(err, reconcile.TerminalError(nil)) {
		reason = polykubev1alpha1.ReasonReconcileFailed
	}
	if reason != "" && isErrorReason(reason) {
		metrics.ReconcileError(ControllerName, reason)
	}
	metrics.SetWorkloadReplicas(wl.Namespace, wl.Name, wl.Status.DesiredReplicas, wl.Status.ReadyReplicas)
}

// serviceEndpointProvidesService reports whether a ServiceEndpoint of the Workload's name exposes
// this Workload: its Service, of the same name, then stands in for the Workload's own.
func (r *Reconciler) serviceEndpointProvidesService(ctx context.Context, wl *polykubev1alpha1.Workload) (bool, error) {
	se := &polykubev1alpha1.ServiceEndpoint{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(wl), se); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("get ServiceEndpoint %s/%s: %w", wl.Namespace, wl.Name, err)
	}
	return se.Spec.WorkloadRef.Name == wl.Name, nil
}

// applyDeployment creates the Deployment or patches it when the labels, the template hash or,
// with manageReplicas, the replicas differ from what is desired. Without manageReplicas (an HPA
// scales it) an existing Deployment's replicas are neither compared nor written. It returns the
// Deployment as it now is.
func (r *Reconciler) applyDeployment(ctx context.Context, wl *polykubev1alpha1.Workload, effective corev1.PodTemplateSpec,
	replicas int32, manageReplicas bool, lastReplicas int32, bindings []binding, existing *appsv1.Deployment) (*appsv1.Deployment, error) {
	want := desiredDeployment(wl, effective, r.ClusterName, replicas, bindings, existing)
	log := ctrl.LoggerFrom(ctx).WithValues("deployment", client.ObjectKeyFromObject(want))
	if existing == nil {
		log.Info("Creating Deployment", "replicas", replicas)
		if err := r.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			return nil, errCacheBehind
		} else if err != nil {
			return nil, fmt.Errorf("create Deployment %s/%s: %w", want.Namespace, want.Name, err)
		}
		return want, nil
	}
	replicasOK := !manageReplicas || ptr.Deref(existing.Spec.Replicas, 1) == replicas
	if existing.Annotations[TemplateHashAnnotation] == want.Annotations[TemplateHashAnnotation] &&
		replicasOK && hasLabels(existing.Labels, want.Labels) && sameImages(existing.Spec.Template.Spec, want.Spec.Template.Spec) {
		return existing, nil
	}
	updated := updatedDeployment(existing, want, manageReplicas)
	log.Info("Updating Deployment", "replicas", ptr.Deref(updated.Spec.Replicas, 1), "replicasByHPA", !manageReplicas)
	if err := r.Patch(ctx, updated, client.MergeFrom(existing)); err != nil {
		return nil, fmt.Errorf("patch Deployment %s/%s: %w", want.Namespace, want.Name, err)
	}
	countDrift(existing, want, manageReplicas, lastReplicas)
	return updated, nil
}

// sameImages reports whether two pod specs run the same images in the same containers. The
// template hash annotation says which template the operator last wrote; the images are the part
// of the running template that the API server's defaulting never changes, so comparing them
// too catches an edit by hand (kubectl set image) without comparing defaulted fields.
func sameImages(have, want corev1.PodSpec) bool {
	images := func(ps corev1.PodSpec) map[string]string {
		m := make(map[string]string, len(ps.InitContainers)+len(ps.Containers))
		for _, c := range ps.InitContainers {
			m["init/"+c.Name] = c.Image
		}
		for _, c := range ps.Containers {
			m[c.Name] = c.Image
		}
		return m
	}
	return maps.Equal(images(have), images(want))
}

// applyService creates, patches or deletes the Workload's Service.
func (r *Reconciler) applyService(ctx context.Context, wl *polykubev1alpha1.Workload, existing *corev1.Service) error {
	want := desiredService(wl, r.ClusterName)
	if want == nil {
		return r.deleteOwned(ctx, nil, existing, nil)
	}
	log := ctrl.LoggerFrom(ctx).WithValues("service", client.ObjectKeyFromObject(want))
	if existing == nil {
		log.Info("Creating Service")
		if err := r.Create(ctx, want); apierrors.IsAlreadyExists(err) {
			return errCacheBehind
		} else if err != nil {
			return fmt.Errorf("create Service %s/%s: %w", want.Namespace, want.Name, err)
		}
		return nil
	}
	if existing.Annotations[TemplateHashAnnotation] == want.Annotations[TemplateHashAnnotation] && hasLabels(existing.Labels, want.Labels) {
		return nil
	}
	updated := existing.DeepCopy()
	updated.Labels = mergeMaps(updated.Labels, want.Labels)
	updated.Annotations = mergeMaps(updated.Annotations, want.Annotations)
	updated.Spec.Type = want.Spec.Type
	updated.Spec.Selector = want.Spec.Selector
	updated.Spec.Ports = want.Spec.Ports
	log.Info("Updating Service")
	if err := r.Patch(ctx, updated, client.MergeFrom(existing)); err != nil {
		return fmt.Errorf("patch Service %s/%s: %w", want.Namespace, want.Name, err)
	}
	return nil
}

// deleteOwned deletes the given objects (each may be nil), which the caller checked are owned
// by the Workload; the UID precondition makes sure it deletes exactly those.
func (r *Reconciler) deleteOwned(ctx context.Context, dep *appsv1.Deployment, svc *corev1.Service, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	var objs []client.Object
	if dep != nil {
		objs = append(objs, dep)
	}
	if svc != nil {
		objs = append(objs, svc)
	}
	if hpa != nil {
		objs = append(objs, hpa)
	}
	for _, obj := range objs {
		kind := kindOf(obj)
		uid := obj.GetUID()
		ctrl.LoggerFrom(ctx).Info("Deleting an object the Workload no longer needs in this cluster", "kind", kind, "object", client.ObjectKeyFromObject(obj))
		err := r.Delete(ctx, obj, client.Preconditions{UID: &uid}, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete %s %s/%s: %w", kind, obj.GetNamespace(), obj.GetName(), err)
		}
	}
	return nil
}

func (r *Reconciler) secretRecheck() time.Duration {
	if r.SecretRecheckInterval > 0 {
		return r.SecretRecheckInterval
	}
	return DefaultSecretRecheckInterval
}

func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// allocationMessage is the Allocated condition's message: the share of the first maxListed
// clusters, then how many more and the total, so that the message does not grow with the
// roster (polykube-status recomputes every cluster's share, decision 0013).
func allocationMessage(alloc placement.Allocation, bounds placement.BoundsAllocation) string {
	if bounds != nil {
		parts := make([]string, 0, min(len(bounds), maxListed))
		for _, b := range bounds[:min(len(bounds), maxListed)] {
			parts = append(parts, fmt.Sprintf("%s=%d..%d", b.Cluster, b.Min, b.Max))
		}
		return "autoscaled, replicas per cluster between: " + listed(parts, len(bounds)) + clustersInAll(len(bounds), "at least ", alloc.Total())
	}
	parts := make([]string, 0, min(len(alloc), maxListed))
	for _, s := range alloc[:min(len(alloc), maxListed)] {
		parts = append(parts, fmt.Sprintf("%s=%d", s.Cluster, s.Replicas))
	}
	return "replicas per cluster: " + listed(parts, len(alloc)) + clustersInAll(len(alloc), "", alloc.Total())
}

// clustersInAll says, for an allocation over more clusters than a message lists, how many
// clusters and replicas it has in all.
func clustersInAll(clusters int, atLeast string, replicas int64) string {
	if clusters <= maxListed {
		return ""
	}
	return fmt.Sprintf(" (%s%d replicas over %d clusters; polykube-status lists each)", atLeast, replicas, clusters)
}

func pluralIs(n int) string {
	if n == 1 {
		return "was"
	}
	return "were"
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

func mergeMaps(dst, src map[string]string) map[string]string {
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	for k, v := range src {
		dst[k] = v
	}
	return dst
}
