// Package federation reconciles the roster: the Federation, whose status reports whether the
// roster meets what Cilium ClusterMesh requires as far as this cluster can tell, and every
// ClusterMember, whose status.local marks the one this operator runs in.
//
// Everything here is read from the roster Git delivered to this cluster; nothing is asked of
// peers. The reconcilers write status only, and delete nothing.
package federation

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/metrics"
	"github.com/polykube/polykube/operator/internal/statusfinal"
)

const (
	// ControllerName names the Federation controller in logs, metrics and events.
	ControllerName = "federation"
	// clusterMemberControllerName names the ClusterMember controller.
	clusterMemberControllerName = "clustermember"
	// eventAction is the events.k8s.io action of every event this package emits.
	eventAction = "CheckRoster"
	// staleRetryInterval is how soon a reconcile that acted on an outdated cached object runs
	// again, should the watch event that brings the newer one not trigger it first.
	staleRetryInterval = time.Second
)

// +kubebuilder:rbac:groups=polykube.kismet.io,resources=federations,verbs=get;list;watch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=federations/status,verbs=patch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=clustermembers,verbs=get;list;watch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=clustermembers/status,verbs=patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch

// Reconciler reconciles Federations and, through SetupWithManager, ClusterMembers.
type Reconciler struct {
	client.Client
	Scheme   *runtime.Scheme
	Recorder events.EventRecorder
	// ClusterName is the operator's --cluster-name: the ClusterMember this cluster is.
	ClusterName string
	// OperatorVersion is reported as status.operatorVersion on the local ClusterMember.
	OperatorVersion string

	finalOnce   sync.Once
	fedFinal    *statusfinal.Finalizer
	memberFinal *statusfinal.Finalizer
}

// SetupWithManager registers two controllers: one for Federations, re-run for every Federation
// whenever a ClusterMember is created, deleted or changes its spec; one for ClusterMembers.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.ClusterName == "" {
		return errors.New("federation reconciler: the cluster name is empty: start the operator with --cluster-name set to this cluster's ClusterMember name")
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&polykubev1alpha1.Federation{}).
		Watches(&polykubev1alpha1.ClusterMember{},
			handler.EnqueueRequestsFromMapFunc(r.allFederations),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Complete(r); err != nil {
		return fmt.Errorf("set up the Federation controller: %w", err)
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named(clusterMemberControllerName).
		For(&polykubev1alpha1.ClusterMember{}).
		Complete(&memberReconciler{r}); err != nil {
		return fmt.Errorf("set up the ClusterMember controller: %w", err)
	}
	return nil
}

// allFederations maps any ClusterMember event to every Federation: any roster may name it.
func (r *Reconciler) allFederations(ctx context.Context, _ client.Object) []reconcile.Request {
	var list polykubev1alpha1.FederationList
	if err := r.List(ctx, &list); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Listing Federations to re-check after a ClusterMember changed")
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(list.Items))
	for _, f := range list.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&f)})
	}
	return reqs
}

// Reconcile checks one Federation's roster against the ClusterMembers in this cluster and
// writes the result to its status, only when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)

	fed := &polykubev1alpha1.Federation{}
	if err := r.Get(ctx, req.NamespacedName, fed); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !fed.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	var members polykubev1alpha1.ClusterMemberList
	if err := r.List(ctx, &members); err != nil {
		metrics.ReconcileError(ControllerName, polykubev1alpha1.ReasonReconcileFailed)
		return r.fedFinalizer().Finalize(ctx, fed.DeepCopy(), fed, ctrl.Result{},
			fmt.Errorf("list ClusterMembers to check Federation %q: %w", fed.Name, err))
	}

	conditions := make([]metav1.Condition, 0, len(Checks)+1)
	for _, check := range Checks {
		conditions = append(conditions, check(fed.Spec, members.Items, r.ClusterName))
	}
	conditions = append(conditions, Summarize(conditions))

	orig := fed.DeepCopy()
	fed.Status.ObservedGeneration = fed.Generation
	fed.Status.LocalCluster = r.ClusterName
	fed.Status.Members = MemberStatuses(fed.Spec, members.Items, r.ClusterName)
	var transitions []metav1.Condition
	for _, c := range conditions {
		c.ObservedGeneration = fed.Generation
		// Ready repeats the checks' messages; an event per check says it once.
		if c.Type != polykubev1alpha1.ReadyCondition && isTransition(orig.Status.Conditions, c) {
			transitions = append(transitions, c)
		}
		meta.SetStatusCondition(&fed.Status.Conditions, c)
	}
	if !equality.Semantic.DeepEqual(orig.Status, fed.Status) {
		for _, c := range transitions {
			if c.Type == polykubev1alpha1.ClusterIdentifiedCondition && c.Status != metav1.ConditionTrue {
				log.Info("This cluster's ClusterMember is missing", "clusterName", r.ClusterName, "federation", fed.Name)
			}
		}
		log.V(1).Info("Writing Federation status", "ready", meta.FindStatusCondition(fed.Status.Conditions, polykubev1alpha1.ReadyCondition).Reason)
	}
	// Finalize also when nothing changed: the cached copy may be older than the last write.
	result, err := r.fedFinalizer().Finalize(ctx, orig, fed, ctrl.Result{}, nil)
	if err != nil {
		metrics.ReconcileError(ControllerName, polykubev1alpha1.ReasonReconcileFailed)
	}
	return result, err
}

// checkConditions are the condition types of the Checks; each transition is an event (Ready
// repeats their messages and gets none).
var checkConditions = []string{
	polykubev1alpha1.ClusterIdentifiedCondition, polykubev1alpha1.LocalMemberListedCondition,
	polykubev1alpha1.MembersPresentCondition, polykubev1alpha1.ClusterNamesValidCondition,
	polykubev1alpha1.ClusterIDsValidCondition, polykubev1alpha1.PodCIDRsDisjointCondition,
	polykubev1alpha1.OverlayEndpointsUniqueCondition,
}

// fedFinalizer and memberFinalizer are the status policy shared by every Polykube reconciler
// (operator/internal/statusfinal).
func (r *Reconciler) fedFinalizer() *statusfinal.Finalizer {
	r.finalOnce.Do(r.initFinalizers)
	return r.fedFinal
}

func (r *Reconciler) memberFinalizer() *statusfinal.Finalizer {
	r.finalOnce.Do(r.initFinalizers)
	return r.memberFinal
}

func (r *Reconciler) initFinalizers() {
	r.fedFinal = &statusfinal.Finalizer{
		Client: r.Client, Recorder: r.Recorder, Kind: "Federation", Action: eventAction,
		StaleRetry: staleRetryInterval, EventConditions: checkConditions,
		NoEvent: func(prev *metav1.Condition, c metav1.Condition) bool {
			var previous []metav1.Condition
			if prev != nil {
				previous = []metav1.Condition{*prev}
			}
			return !isTransition(previous, c)
		},
	}
	// The ClusterMember's conditions are not this operator's: it writes only status.local and
	// observedGeneration, records no error in the status and emits no event.
	r.memberFinal = &statusfinal.Finalizer{
		Client: r.Client, Kind: "ClusterMember", StaleRetry: staleRetryInterval,
		EventConditions: []string{}, OnError: func(statusfinal.Object, error) {},
	}
}

// isTransition tells whether c changes the status or reason of its condition type. A condition
// seen for the first time counts as a transition unless it reports plain success, so that
// creating a healthy object emits no events.
func isTransition(previous []metav1.Condition, c metav1.Condition) bool {
	prev := meta.FindStatusCondition(previous, c.Type)
	if prev == nil {
		return c.Status != metav1.ConditionTrue || c.Reason != polykubev1alpha1.ReasonSucceeded
	}
	return prev.Status != c.Status || prev.Reason != c.Reason
}
