// Package datastorebinding reports, for each DatastoreBinding, whether this cluster's Secret
// offers every key it maps and whether the env vars are wired into the Workload's Deployment.
// The wiring itself is done by the Workload reconciler (it owns the Deployment); this package
// also exports the pure helpers both use (Resolve, EnvVars, AppliesTo).
//
// Secret values never leave the API server response they arrive in: only key names are read,
// and env vars reference the Secret with valueFrom.secretKeyRef.
package datastorebinding

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/metrics"
	"github.com/polykube/polykube/operator/internal/ownmember"
	"github.com/polykube/polykube/operator/internal/statusfinal"
	"github.com/polykube/polykube/operator/internal/suspend"
	"github.com/polykube/polykube/placement"
)

// ControllerName names the controller in logs, metrics and events.
const ControllerName = "datastorebinding"

const (
	// DefaultSecretRecheckInterval is how often a binding whose Secret or keys are missing is
	// checked again (Secrets cannot be watched: RBAC grants only get).
	DefaultSecretRecheckInterval = 30 * time.Second
	// BoundRecheckFactor: a bound binding checks that its Secret still has every key this many
	// times less often than an unbound one (5m with the default 30s).
	BoundRecheckFactor = 10
)

// +kubebuilder:rbac:groups=polykube.kismet.io,resources=datastorebindings,verbs=get;list;watch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=datastorebindings/status,verbs=patch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=workloads,verbs=get;list;watch
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler writes the status of DatastoreBindings in the cluster named ClusterName.
//
// Conditions (Ready mirrors Bound, except NotTargeted, where Ready is True):
//   - Bound=True/Succeeded: the Secret has every key and every env var is in the Deployment.
//   - Bound=False/SecretNotFound: the Secret does not exist in this cluster.
//   - Bound=False/SecretKeyMissing: the Secret lacks keys; the message lists them.
//   - Bound=False/SecretUnreadable: the operator may not read the Secret (Forbidden).
//   - Bound=False/WorkloadNotFound: the referenced Workload does not exist.
//   - Bound=False/InvalidSpec: the Workload's distribution is invalid, no container the
//     binding names exists in the Workload's template, or spec.secretRef.name is no Secret
//     name (a binding created before the CRD refused such names).
//   - Bound=False/NotTargeted: this cluster is not a target of the Workload (Ready=True).
//   - Bound=False/ClusterUnknown or ClusterMemberTerminating: this cluster's own ClusterMember
//     is absent or being deleted; the Workload changes nothing here, BoundEnv stays as it was.
//   - Bound=False/DeploymentPending: the Workload's Deployment does not exist yet.
//   - Bound=False/Progressing: the env vars are not in the Deployment yet.
//   - Bound=False/EnvConflict: a binding of the same Workload established earlier maps one of
//     this binding's env vars into the same container and keeps it.
//   - Bound=False/ReconcileFailed: an API call failed; the reconciler retries.
type Reconciler struct {
	client.Client
	Scheme      *runtime.Scheme
	Recorder    events.EventRecorder
	ClusterName string

	// SecretRecheckInterval overrides DefaultSecretRecheckInterval when set; bound bindings
	// are re-checked BoundRecheckFactor times less often.
	SecretRecheckInterval time.Duration

	finalOnce sync.Once
	final     *statusfinal.Finalizer
}

// SetupWithManager registers the controller. Workloads and Deployments map to the bindings
// that reference the Workload of their name.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ClusterName == "" {
		return errors.New("datastorebinding reconciler: ClusterName is empty; start the operator with --cluster-name")
	}
	byWorkload := handler.EnqueueRequestsFromMapFunc(r.bindingsOf)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&polykubev1alpha1.DatastoreBinding{}, builder.WithPredicates(suspend.RequestedOrGenerationChanged())).
		Watches(&polykubev1alpha1.Workload{}, byWorkload, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&appsv1.Deployment{}, byWorkload, builder.WithPredicates(predicate.NewPredicateFuncs(func(o client.Object) bool {
			return o.GetLabels()[polykubev1alpha1.ManagedByLabel] == polykubev1alpha1.ManagedByValue
		}))).
		Complete(r)
}

// bindingsOf enqueues the bindings that reference the Workload named like o.
func (r *Reconciler) bindingsOf(ctx context.Context, o client.Object) []reconcile.Request {
	list := &polykubev1alpha1.DatastoreBindingList{}
	if err := r.List(ctx, list, client.InNamespace(o.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "List DatastoreBindings to map a Workload change")
		return nil
	}
	var reqs []reconcile.Request
	for _, b := range ForWorkload(list.Items, o.GetName()) {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&b)})
	}
	return reqs
}

// Reconcile checks the binding and patches its status when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	b := &polykubev1alpha1.DatastoreBinding{}
	if err := r.Get(ctx, req.NamespacedName, b); err != nil {
		if apierrors.IsNotFound(err) {
			r.finalizer().Forget(req.NamespacedName)
		}
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !b.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}
	before := b.DeepCopy()
	if b.Spec.Suspend {
		suspend.MarkSuspended(&b.Status.ObservedGeneration, &b.Status.Conditions, b.Generation, "DatastoreBinding")
		suspend.Handled(b, &b.Status.LastHandledReconcileAt)
		return r.finalizer().Finalize(ctx, before, b, ctrl.Result{}, nil)
	}
	result, err := r.reconcileNormal(ctx, b)
	suspend.Handled(b, &b.Status.LastHandledReconcileAt)
	if err != nil {
		metrics.ReconcileError(ControllerName, polykubev1alpha1.ReasonReconcileFailed)
	}
	return r.finalizer().Finalize(ctx, before, b, result, err)
}

// finalizer is the status policy shared by every Polykube reconciler (operator/internal/statusfinal):
// an error sets Bound and Ready, and the rollout's transitional reasons get no event.
func (r *Reconciler) finalizer() *statusfinal.Finalizer {
	r.finalOnce.Do(func() {
		r.final = &statusfinal.Finalizer{
			Client: r.Client, Recorder: r.Recorder, Kind: "DatastoreBinding", Action: "Reconcile",
			NoEvent: func(_ *metav1.Condition, c metav1.Condition) bool {
				return c.Reason == polykubev1alpha1.ReasonDeploymentPending || c.Reason == polykubev1alpha1.ReasonProgressing ||
					c.Reason == polykubev1alpha1.ReasonSuspended
			},
			OnError: func(obj statusfinal.Object, err error) {
				setBound(obj.(*polykubev1alpha1.DatastoreBinding), metav1.ConditionFalse, polykubev1alpha1.ReasonReconcileFailed, err.Error())
			},
		}
	})
	return r.final
}

func (r *Reconciler) reconcileNormal(ctx context.Context, b *polykubev1alpha1.DatastoreBinding) (ctrl.Result, error) {
	b.Status.ObservedGeneration = b.Generation
	interval := durationOr(r.SecretRecheckInterval, DefaultSecretRecheckInterval)
	recheck := ctrl.Result{RequeueAfter: interval}

	// Step 1: the Workload and whether this cluster runs it.
	wl := &polykubev1alpha1.Workload{}
	wlKey := types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.WorkloadRef.Name}
	if err := r.Get(ctx, wlKey, wl); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get Workload %s: %w", wlKey, err)
		}
		b.Status.BoundEnv = nil
		setBound(b, metav1.ConditionFalse, polykubev1alpha1.ReasonWorkloadNotFound,
			fmt.Sprintf("Workload %s does not exist; create it or fix spec.workloadRef.name", wlKey))
		return ctrl.Result{}, nil
	}
	// While this cluster's own ClusterMember is absent or terminating, the Workload changes
	// nothing here (package ownmember): the env vars wired stay, and so does BoundEnv.
	if member, reason, msg, err := ownmember.Get(ctx, r.Client, r.ClusterName); err != nil {
		return ctrl.Result{}, err
	} else if member == nil {
		setBound(b, metav1.ConditionFalse, reason, msg)
		return ctrl.Result{}, nil
	}
	var roster []polykubev1alpha1.ClusterMember
	if placement.UsesRoster(wl) {
		list := &polykubev1alpha1.ClusterMemberList{}
		if err := r.List(ctx, list); err != nil {
			return ctrl.Result{}, fmt.Errorf("list ClusterMembers to resolve the targets of Workload %s: %w", wlKey, err)
		}
		roster = list.Items
	}
	alloc, err := placement.ForWorkloadIn(wl, roster)
	if errors.Is(err, placement.ErrNoTargets) {
		alloc, err = nil, nil // valid, and selecting no cluster: this one is not a target
	}
	if err != nil {
		setBound(b, metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec,
			fmt.Sprintf("Workload %s cannot be allocated (see its Allocated condition): %v", wlKey, err))
		return ctrl.Result{}, nil
	}
	if _, targeted := alloc.For(r.ClusterName); !targeted {
		b.Status.BoundEnv = nil
		setBound(b, metav1.ConditionFalse, polykubev1alpha1.ReasonNotTargeted,
			fmt.Sprintf("cluster %q is not a target of Workload %s; nothing to bind here", r.ClusterName, wlKey))
		return ctrl.Result{}, nil
	}
	if missing := missingContainers(b, wl); len(missing) > 0 {
		setBound(b, metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec,
			fmt.Sprintf("spec.containers names %s, which Workload %s's template does not have", strings.Join(missing, ", "), wlKey))
		return ctrl.Result{}, nil
	}

	// Step 2: the local Secret and its keys.
	res, err := Resolve(ctx, r.Client, b)
	if err != nil {
		return ctrl.Result{}, err
	}

	// Step 3: what the Workload's Deployment carries.
	dep := &appsv1.Deployment{}
	if err := r.Get(ctx, wlKey, dep); err != nil {
		if !apierrors.IsNotFound(err) {
			return ctrl.Result{}, fmt.Errorf("get Deployment %s: %w", wlKey, err)
		}
		dep = nil
	}
	if dep != nil && !ownedBy(dep, wl) {
		dep = nil
	}
	wired, complete := wiredEnv(b, dep)
	b.Status.BoundEnv = wired

	// Step 4: another binding of the Workload, established earlier, may map the same variable.
	lost, err := r.lostVariables(ctx, b, wl)
	if err != nil {
		return ctrl.Result{}, err
	}

	switch {
	case len(lost) > 0:
		setBound(b, metav1.ConditionFalse, polykubev1alpha1.ReasonEnvConflict, fmt.Sprintf(
			"%s; rename the variable in this binding (spec.prefix or spec.env[].name) or delete one of the bindings",
			DescribeCollisions(lost)))
		return ctrl.Result{}, nil
	case !res.OK():
		setBound(b, metav1.ConditionFalse, res.Reason, res.Message)
		return recheck, nil
	case dep == nil:
		setBound(b, metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending,
			fmt.Sprintf("the Deployment of Workload %s does not exist yet (see the Workload's Ready condition)", wlKey))
		return ctrl.Result{}, nil
	case !complete:
		setBound(b, metav1.ConditionFalse, polykubev1alpha1.ReasonProgressing,
			fmt.Sprintf("Secret %s/%s has every key; waiting for the Workload reconciler to wire the env vars into Deployment %s",
				b.Namespace, b.Spec.SecretRef.Name, wlKey))
		return ctrl.Result{}, nil
	}
	setBound(b, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded,
		fmt.Sprintf("%s wired into Deployment %s from Secret %s/%s", strings.Join(wired, ", "), wlKey, b.Namespace, b.Spec.SecretRef.Name))
	return ctrl.Result{RequeueAfter: BoundRecheckFactor * interval}, nil
}

// lostVariables are the collisions this binding loses to a binding of the same Workload
// established before it.
func (r *Reconciler) lostVariables(ctx context.Context, b *polykubev1alpha1.DatastoreBinding, wl *polykubev1alpha1.Workload) ([]Collision, error) {
	list := &polykubev1alpha1.DatastoreBindingList{}
	if err := r.List(ctx, list, client.InNamespace(b.Namespace)); err != nil {
		return nil, fmt.Errorf("list DatastoreBindings in %s: %w", b.Namespace, err)
	}
	return LostBy(Collisions(ForWorkload(list.Items, wl.Name), wl.Spec.Template.Spec.Containers), b.Name), nil
}

// setBound sets Bound and Ready. Ready mirrors Bound except for NotTargeted: a cluster that
// does not run the Workload has nothing to bind and is not unhealthy for it.
func setBound(b *polykubev1alpha1.DatastoreBinding, status metav1.ConditionStatus, reason, msg string) {
	set := func(typ string, s metav1.ConditionStatus) {
		meta.SetStatusCondition(&b.Status.Conditions, metav1.Condition{
			Type: typ, Status: s, Reason: reason, Message: msg, ObservedGeneration: b.Generation,
		})
	}
	set(polykubev1alpha1.BoundCondition, status)
	if reason == polykubev1alpha1.ReasonNotTargeted {
		set(polykubev1alpha1.ReadyCondition, metav1.ConditionTrue)
		return
	}
	set(polykubev1alpha1.ReadyCondition, status)
}

// wiredEnv returns the binding's env var names that every container it applies to carries as
// a secretKeyRef to the right Secret and key (sorted), and whether all of them are.
func wiredEnv(b *polykubev1alpha1.DatastoreBinding, dep *appsv1.Deployment) ([]string, bool) {
	if dep == nil {
		return nil, false
	}
	want := EnvVars(b)
	var wired []string
	complete := true
	for _, v := range want {
		everywhere, applies := true, false
		for _, c := range dep.Spec.Template.Spec.Containers {
			if !AppliesTo(b, c.Name) {
				continue
			}
			applies = true
			if !hasEnv(c.Env, v) {
				everywhere = false
			}
		}
		if applies && everywhere {
			wired = append(wired, v.Name)
		} else {
			complete = false
		}
	}
	sort.Strings(wired)
	return wired, complete
}

func hasEnv(env []corev1.EnvVar, want corev1.EnvVar) bool {
	for _, e := range env {
		if e.Name == want.Name && e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil &&
			e.ValueFrom.SecretKeyRef.Name == want.ValueFrom.SecretKeyRef.Name &&
			e.ValueFrom.SecretKeyRef.Key == want.ValueFrom.SecretKeyRef.Key {
			return true
		}
	}
	return false
}

// missingContainers lists the containers the binding names that the Workload's template lacks.
func missingContainers(b *polykubev1alpha1.DatastoreBinding, wl *polykubev1alpha1.Workload) []string {
	var missing []string
	for _, name := range b.Spec.Containers {
		if !slices.ContainsFunc(wl.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == name }) {
			missing = append(missing, name)
		}
	}
	return missing
}

// ownedBy is true when dep is the Deployment Polykube created for wl.
func ownedBy(dep *appsv1.Deployment, wl *polykubev1alpha1.Workload) bool {
	if dep.Labels[polykubev1alpha1.ManagedByLabel] != polykubev1alpha1.ManagedByValue {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(dep)
	return ref != nil && ref.UID == wl.UID
}

func durationOr(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}
