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
	"strings"
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
	"github.com/polykube/polykube/operator/internal/unmanaged"
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
			builder.WithPredicates(mirroredSlice)).
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
	if err := r.List(ctx, list); err != nil {
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

// reconcileNormal runs the steps in order; each failing step sets Ready=False with its reason.
func (r *Reconciler) reconcileNormal(ctx context.Context, wl *polykubev1alpha1.Workload) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	now := metav1.NewTime(r.now())
	st := &wl.Status
	lastReplicas := lastWrittenReplicas(st) // before this reconcile changes the status
	st.Cluster = r.ClusterName
	st.SpecHash = placement.SpecHash(wl.Spec)
	st.ObservedGeneration = wl.Generation
	ready := func(status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.ReadyCondition, status, reason, msg)
	}

	// Step 1: the allocation, a pure function of the spec and the roster (the ClusterMembers in
	// this cluster, which Git delivers alike to every cluster) that targetSelectors select from.
	var roster []polykubev1alpha1.ClusterMember
	if placement.UsesRoster(wl) {
		list := &polykubev1alpha1.ClusterMemberList{}
		if err := r.List(ctx, list); err != nil {
			return ctrl.Result{}, fmt.Errorf("list ClusterMembers to resolve the targetSelectors of Workload %s/%s: %w", wl.Namespace, wl.Name, err)
		}
		roster = list.Items
	}
	alloc, err := placement.ForWorkloadIn(wl, roster)
	if errors.Is(err, placement.ErrNoTargets) {
		// Not a spec error: the roster may still be arriving. Leave what runs here as it is; a
		// ClusterMember that appears re-runs this reconcile.
		msg := fmt.Sprintf("%v; nothing is changed in this cluster until a ClusterMember matches", err)
		setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.AllocatedCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonNoTargets, msg)
		ready(metav1.ConditionFalse, polykubev1alpha1.ReasonNoTargets, msg)
		st.Targets, st.DesiredReplicas = nil, 0
		return ctrl.Result{}, nil
	}
	if err != nil {
		msg := fmt.Sprintf("spec.distribution cannot be allocated: %v; fix the Workload in Git", err)
		setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.AllocatedCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, msg)
		ready(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, msg)
		st.Targets, st.DesiredReplicas, st.ReadyReplicas, st.Phase = nil, 0, 0, ""
		st.AppliedOverrides, st.EffectiveTemplateHash, st.Autoscaling = nil, "", nil
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("allocate Workload %s/%s: %w", wl.Namespace, wl.Name, err))
	}
	// An autoscaled Workload's allocation is its floors; its bounds come from the same split
	// (they cannot fail where the allocation did not).
	bounds, autoscaled, err := placement.BoundsForWorkloadIn(wl, roster)
	if err != nil {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("autoscaling bounds of Workload %s/%s: %w", wl.Namespace, wl.Name, err))
	}
	desired, targeted := alloc.For(r.ClusterName)
	here, _ := bounds.For(r.ClusterName)
	hpaHere := autoscaled && targeted && here.Autoscaled()
	setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.AllocatedCondition, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded,
		allocationMessage(alloc, bounds))
	st.DesiredReplicas = desired
	if err := r.setTargetsKnown(ctx, wl, roster, placement.UsesRoster(wl)); err != nil {
		return ctrl.Result{}, err
	}

	// Step 2: this operator's identity. Without its ClusterMember, or while it is terminating,
	// it creates, changes and deletes nothing (ownMember).
	member, reason, msg, err := r.ownMember(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	if member == nil {
		st.Targets = targetStatuses(alloc, bounds, r.ClusterName, nil, wl.Generation, st.Targets, now)
		st.ReadyReplicas, st.Phase = 0, ""
		st.AppliedOverrides, st.EffectiveTemplateHash, st.Autoscaling = nil, "", nil
		ready(metav1.ConditionFalse, reason, msg)
		return ctrl.Result{}, nil
	}

	// Step 2b: the effective template, a pure function of the spec and this cluster's
	// ClusterMember. An error depends on the spec alone (every cluster reports it) and leaves a
	// running Deployment as it is.
	effective, applied, err := placement.EffectiveTemplate(wl.Spec, member)
	if err != nil {
		msg := fmt.Sprintf("%v; fix the Workload in Git", err)
		ready(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, msg)
		st.Targets = targetStatuses(alloc, bounds, r.ClusterName, nil, wl.Generation, st.Targets, now)
		st.ReadyReplicas, st.Phase = 0, ""
		st.AppliedOverrides, st.EffectiveTemplateHash, st.Autoscaling = nil, "", nil
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("render the template of Workload %s/%s: %w", wl.Namespace, wl.Name, err))
	}

	// Step 3: refuse to touch objects Polykube did not create for this Workload. A ServiceEndpoint
	// of the Workload's own name that exposes it provides the Service (a global one, in every
	// member): the Workload then makes no Service of its own.
	endpointService, err := r.serviceEndpointProvidesService(ctx, wl)
	if err != nil {
		return ctrl.Result{}, err
	}
	dep, svc, conflicts, others, err := r.existing(ctx, wl, endpointService)
	if err != nil {
		return ctrl.Result{}, err
	}
	hpa, hpaConflict, hpaOther, err := r.existingHPA(ctx, wl, hpaHere)
	if err != nil {
		return ctrl.Result{}, err
	}
	if hpaConflict != "" {
		conflicts = append(conflicts, hpaConflict)
	}
	if hpaOther != "" {
		others = append(others, hpaOther)
	}
	if len(others) > 0 {
		st.Targets = targetStatuses(alloc, bounds, r.ClusterName, nil, wl.Generation, st.Targets, now)
		st.ReadyReplicas, st.Phase = 0, ""
		st.AppliedOverrides, st.EffectiveTemplateHash, st.Autoscaling = nil, "", nil
		ready(metav1.ConditionFalse, polykubev1alpha1.ReasonIdentityMismatch, otherClusterMessage(others, r.ClusterName))
		return ctrl.Result{}, nil
	}

	// Step 4: not a target here: remove what this cluster ran for it. Objects of the same name
	// that Polykube did not make are no concern of a Workload that runs nothing here.
	if !targeted {
		if err := r.deleteOwned(ctx, dep, svc, hpa); err != nil {
			return ctrl.Result{}, err
		}
		st.Failover = nil
		meta.RemoveStatusCondition(&st.Conditions, polykubev1alpha1.FailoverReadyCondition)
		st.Targets = targetStatuses(alloc, bounds, r.ClusterName, nil, wl.Generation, st.Targets, now)
		st.ReadyReplicas, st.Phase = 0, ""
		st.AppliedOverrides, st.EffectiveTemplateHash, st.Autoscaling = nil, "", nil
		ready(metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted,
			fmt.Sprintf("cluster %q is not a target of this Workload; nothing runs here", r.ClusterName))
		return ctrl.Result{}, nil
	}
	if len(conflicts) > 0 {
		st.Targets = targetStatuses(alloc, bounds, r.ClusterName, nil, wl.Generation, st.Targets, now)
		st.ReadyReplicas, st.Phase = 0, ""
		st.AppliedOverrides, st.EffectiveTemplateHash, st.Autoscaling = nil, "", nil
		ready(metav1.ConditionFalse, polykubev1alpha1.ReasonConflict, fmt.Sprintf(
			"%s already exist(s) and %s not created by Polykube for this Workload; Polykube never adopts objects: delete or rename them, or rename the Workload",
			strings.Join(conflicts, " and "), pluralIs(len(conflicts))))
		return ctrl.Result{}, nil
	}

	// Step 5: DatastoreBindings: which ones the local Secret can satisfy.
	bindings, unresolved, err := r.bindings(ctx, wl)
	if err != nil {
		return ctrl.Result{}, err
	}
	if status, reason, msg, ok := envCondition(effective.Spec.Containers, bindings); ok {
		setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.EnvVarsUniqueCondition, status, reason, msg)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, polykubev1alpha1.EnvVarsUniqueCondition)
	}
	var result ctrl.Result
	if unresolved {
		result.RequeueAfter = r.secretRecheck()
	}

	// Step 5b: capacity failover, when the Workload opts in: base + what this cluster's view of
	// the mesh says its peers miss, capped. Without it, replicas is the allocation.
	fo, err := r.failover(ctx, wl, roster, alloc, desired)
	if err != nil {
		return ctrl.Result{}, err
	}
	replicas := fo.replicas
	if fo.requeueAfter > 0 && (result.RequeueAfter == 0 || fo.requeueAfter < result.RequeueAfter) {
		result.RequeueAfter = fo.requeueAfter
	}

	// Step 6: the Deployment (from the effective template), its HPA and the Service. With an
	// HPA here the HPA owns the Deployment's replicas (writesReplicas).
	st.AppliedOverrides, st.EffectiveTemplateHash = applied, placement.TemplateHash(effective)
	// An HPA Polykube did not make that scales the Deployment has its replicas (foreignhpa.go).
	foreign, err := r.foreignHPAs(ctx, wl, hpa)
	if err != nil {
		return ctrl.Result{}, err
	}
	manageReplicas := dep == nil || (len(foreign) == 0 && writesReplicas(hpaHere, hpa != nil, ptr.Deref(dep.Spec.Replicas, 1)))
	dep, err = r.applyDeployment(ctx, wl, effective, replicas, manageReplicas, lastReplicas, bindings, dep)
	switch {
	case errors.Is(err, errCacheBehind):
		return ctrl.Result{RequeueAfter: time.Second}, nil
	case apierrors.IsInvalid(err):
		// Template content the Workload's schema accepts and the Deployment API refuses: only a
		// change of the Workload helps, so it is not retried. A running Deployment stays as it is.
		ready(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"the API server refused the Deployment rendered from spec.template (with this cluster's overrides): %v; fix spec.template or spec.overrides in Git", err))
		return ctrl.Result{}, reconcile.TerminalError(err)
	case err != nil:
		return ctrl.Result{}, err
	}
	if autoscaled || hpa != nil {
		err := r.applyHPA(ctx, wl, here, hpaHere, hpa)
		switch {
		case errors.Is(err, errCacheBehind):
			return ctrl.Result{RequeueAfter: time.Second}, nil
		case apierrors.IsInvalid(err):
			msg := fmt.Sprintf("the API server refused the HorizontalPodAutoscaler of spec.autoscaling: %v; fix spec.autoscaling in Git", err)
			st.Autoscaling = nil
			ready(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, msg)
			return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("apply the HorizontalPodAutoscaler of Workload %s/%s: %w", wl.Namespace, wl.Name, err))
		case err != nil:
			return ctrl.Result{}, err
		}
	}
	if endpointService {
		// Hand the name over: remove a Service this Workload made before the ServiceEndpoint came.
		if err := r.deleteOwned(ctx, nil, svc, nil); err != nil {
			return ctrl.Result{}, err
		}
	} else if err := r.applyService(ctx, wl, svc); errors.Is(err, errCacheBehind) {
		return ctrl.Result{RequeueAfter: time.Second}, nil
	} else if err != nil {
		return ctrl.Result{}, err
	}

	// Step 7: status of the local slice. Scaled by an HPA, the Deployment's own replicas are
	// what it should run: desired = current, within this cluster's bounds.
	want := replicas
	st.Autoscaling = nil
	if autoscaled {
		current := ptr.Deref(dep.Spec.Replicas, 1)
		st.Autoscaling = autoscalingStatus(here, current)
		if hpaHere {
			want = current
			st.DesiredReplicas = current
		}
	}
	if len(foreign) > 0 && !hpaHere {
		want = ptr.Deref(dep.Spec.Replicas, 1)
	}
	obs := observe(dep, want)
	if hpaHere || len(foreign) > 0 {
		obs.Current = ptr.To(want)
	}
	st.Targets = targetStatuses(alloc, bounds, r.ClusterName, &obs, wl.Generation, st.Targets, now)
	st.ReadyReplicas, st.Phase = obs.Ready, obs.Phase
	if len(foreign) > 0 {
		ready(metav1.ConditionFalse, polykubev1alpha1.ReasonForeignHPA, foreignHPAMessage(wl, foreign, want, replicas, autoscaled))
	} else {
		ready(readyFromPhase(wl, obs, want))
	}
	log.V(1).Info("Reconciled Workload", "desiredReplicas", desired, "phase", obs.Phase, "appliedOverrides", applied)
	return result, nil
}

// existing returns the Deployment and Service named after the Workload if Polykube created them
// for it in this cluster (taking over those an earlier Workload of this name left), a
// description of each one that exists but was not (conflicts), and of each one Polykube made
// under another cluster name (others).
func (r *Reconciler) existing(ctx context.Context, wl *polykubev1alpha1.Workload, endpointService bool) (
	dep *appsv1.Deployment, svc *corev1.Service, conflicts, others []string, err error) {
	key := client.ObjectKeyFromObject(wl)
	dep = &appsv1.Deployment{}
	if err := r.Get(ctx, key, dep); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, nil, nil, fmt.Errorf("get Deployment %s: %w", key, err)
		}
		dep = nil
		if held, err := r.foreignHolds(ctx, unmanaged.Deployment(), key); err != nil {
			return nil, nil, nil, nil, err
		} else if held {
			conflicts = append(conflicts, fmt.Sprintf("Deployment %s", key))
		}
	} else {
		switch r.classify(dep, wl) {
		case takeOver:
			if err := r.takeOverObject(ctx, wl, dep); err != nil {
				return nil, nil, nil, nil, err
			}
		case otherCluster:
			others = append(others, fmt.Sprintf("Deployment %s (cluster %q)", key, dep.Labels[polykubev1alpha1.ClusterLabel]))
			dep = nil
		case foreign:
			conflicts = append(conflicts, fmt.Sprintf("Deployment %s", key))
			dep = nil
		}
	}
	svc = &corev1.Service{}
	if err := r.Get(ctx, key, svc); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, nil, nil, nil, fmt.Errorf("get Service %s: %w", key, err)
		}
		svc = nil
		if len(wl.Spec.Ports) > 0 && !endpointService {
			if held, err := r.foreignHolds(ctx, unmanaged.Service(), key); err != nil {
				return nil, nil, nil, nil, err
			} else if held {
				conflicts = append(conflicts, fmt.Sprintf("Service %s", key))
			}
		}
	} else {
		switch r.classify(svc, wl) {
		case takeOver:
			if err := r.takeOverObject(ctx, wl, svc); err != nil {
				return nil, nil, nil, nil, err
			}
		case otherCluster:
			others = append(others, fmt.Sprintf("Service %s (cluster %q)", key, svc.Labels[polykubev1alpha1.ClusterLabel]))
			svc = nil
		case foreign:
			// A foreign Service only conflicts when this Workload wants one of its own.
			if len(wl.Spec.Ports) > 0 && !endpointService {
				conflicts = append(conflicts, fmt.Sprintf("Service %s", key))
			}
			svc = nil
		}
	}
	return dep, svc, conflicts, others, nil
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
	updated := existing.DeepCopy()
	updated.Labels = mergeMaps(updated.Labels, want.Labels)
	updated.Annotations = mergeMaps(updated.Annotations, want.Annotations)
	if manageReplicas {
		updated.Spec.Replicas = want.Spec.Replicas
	}
	updated.Spec.Template = want.Spec.Template
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
// roster (status.targets has every cluster's share).
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
	return fmt.Sprintf(" (%s%d replicas over %d clusters; status.targets lists each)", atLeast, replicas, clusters)
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
