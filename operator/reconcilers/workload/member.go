package workload

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// ownMember returns this cluster's ClusterMember when the Workload may act on it. It returns
// nil, with the Ready reason and message to report, when the member is absent or terminating:
// then the Workload creates, changes and deletes nothing in this cluster.
//
// A terminating member counts as absent because placement leaves it out of the targets
// (ResolveTargets): acting on it would read "no longer targeted here" and delete the
// Deployment, Service and HPA of every Workload that reaches this cluster by label. A roster
// that loses this cluster (one bad commit, an Argo CD foreground prune) must not do that; the
// finalizer that holds the member may never be released, and then nothing here changes.
func (r *Reconciler) ownMember(ctx context.Context) (member *polykubev1alpha1.ClusterMember, reason, msg string, err error) {
	member = &polykubev1alpha1.ClusterMember{}
	if err := r.Get(ctx, types.NamespacedName{Name: r.ClusterName}, member); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, "", "", fmt.Errorf("get ClusterMember %q: %w", r.ClusterName, err)
		}
		return nil, polykubev1alpha1.ReasonClusterUnknown, fmt.Sprintf(
			"no ClusterMember named %q (this operator's --cluster-name) exists in this cluster; nothing is created until the roster in Git lists it",
			r.ClusterName), nil
	}
	if !member.DeletionTimestamp.IsZero() {
		return nil, polykubev1alpha1.ReasonClusterMemberTerminating, fmt.Sprintf(
			"ClusterMember %q (this cluster) is being deleted (since %s, finalizers %v); nothing is created, changed or deleted in this cluster while it is: "+
				"if the roster in Git should list this cluster, restore it there; to stop running Workloads here, change their targets or delete them, not this ClusterMember",
			r.ClusterName, member.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z"), member.Finalizers), nil
	}
	return member, "", "", nil
}
