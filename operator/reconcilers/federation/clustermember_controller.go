package federation

import (
	"context"

	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/metrics"
)

// memberReconciler marks the ClusterMember this operator runs in: status.local is true on the
// one named by ClusterName and false on every other.
type memberReconciler struct {
	*Reconciler
}

// Reconcile writes a ClusterMember's status only when status.local or observedGeneration
// would change, through the shared status policy (operator/internal/statusfinal).
func (r *memberReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	member := &polykubev1alpha1.ClusterMember{}
	if err := r.Get(ctx, req.NamespacedName, member); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	if !member.DeletionTimestamp.IsZero() {
		return ctrl.Result{}, nil
	}

	want := MemberStatus(member, r.ClusterName, r.OperatorVersion)
	orig := member.DeepCopy()
	if member.Status.Local != want.Local || member.Status.ObservedGeneration != want.ObservedGeneration ||
		member.Status.OperatorVersion != want.OperatorVersion {
		ctrl.LoggerFrom(ctx).V(1).Info("Writing ClusterMember status", "local", want.Local, "operatorVersion", want.OperatorVersion)
	}
	member.Status.Local = want.Local
	member.Status.ObservedGeneration = want.ObservedGeneration
	member.Status.OperatorVersion = want.OperatorVersion
	// Finalize also when nothing changed: the cached copy may be older than the last write.
	result, err := r.memberFinalizer().Finalize(ctx, orig, member, ctrl.Result{}, nil)
	if err != nil {
		metrics.ReconcileError(clusterMemberControllerName, polykubev1alpha1.ReasonReconcileFailed)
	}
	return result, err
}

// MemberStatus is the status fields this operator owns on a ClusterMember: whether it is the
// local cluster, the generation that was looked at, and on the local member only, the version
// of the operator running here (a peer's version is its own cluster's to report, and this
// cluster cannot know it). Conditions are left as they are.
func MemberStatus(member *polykubev1alpha1.ClusterMember, localCluster, operatorVersion string) polykubev1alpha1.ClusterMemberStatus {
	s := polykubev1alpha1.ClusterMemberStatus{
		ObservedGeneration: member.Generation,
		Local:              member.Name == localCluster,
	}
	if s.Local {
		s.OperatorVersion = operatorVersion
	}
	return s
}
