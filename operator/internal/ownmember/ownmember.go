// Package ownmember tells every reconciler whether this cluster's own ClusterMember is plainly
// there. It is absent until the roster in Git delivers it, and terminating while a finalizer or
// a foreground deletion (Argo CD's prune) holds it. In both cases placement leaves it out of the
// targets that labels select, so a reconciler acting on the targets would take this cluster for
// "not targeted" and undo what runs here. Each reconciler instead changes nothing and reports the
// reason this package returns: one roster commit that loses this cluster must not delete its
// workloads, in this cluster or in every cluster at once.
package ownmember

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Get returns this cluster's ClusterMember when it is there and not terminating. Otherwise it
// returns nil with the reason (ClusterUnknown or ClusterMemberTerminating) and a message that
// says what to do; err is an API error only.
func Get(ctx context.Context, c client.Reader, clusterName string) (member *polykubev1alpha1.ClusterMember, reason, msg string, err error) {
	member = &polykubev1alpha1.ClusterMember{}
	if err := c.Get(ctx, client.ObjectKey{Name: clusterName}, member); err != nil {
		if !apierrors.IsNotFound(err) {
			return nil, "", "", fmt.Errorf("get ClusterMember %q: %w", clusterName, err)
		}
		return nil, polykubev1alpha1.ReasonClusterUnknown, fmt.Sprintf(
			"no ClusterMember named %q (this operator's --cluster-name) exists in this cluster; nothing is created until the roster in Git lists it",
			clusterName), nil
	}
	if !member.DeletionTimestamp.IsZero() {
		return nil, polykubev1alpha1.ReasonClusterMemberTerminating, fmt.Sprintf(
			"ClusterMember %q (this cluster) is being deleted (since %s, finalizers %v); nothing is created, changed or deleted in this cluster while it is: "+
				"if the roster in Git should list this cluster, restore it there; to stop running Workloads here, change their targets or delete them, not this ClusterMember",
			clusterName, member.DeletionTimestamp.UTC().Format("2006-01-02T15:04:05Z"), member.Finalizers), nil
	}
	return member, "", "", nil
}
