package workload

import (
	"context"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/ownmember"
)

// ownMember returns this cluster's ClusterMember when the Workload may act on it. It returns
// nil, with the Ready reason and message to report, when the member is absent or terminating:
// then the Workload creates, changes and deletes nothing in this cluster (package ownmember says
// why a terminating member counts as absent).
func (r *Reconciler) ownMember(ctx context.Context) (member *polykubev1alpha1.ClusterMember, reason, msg string, err error) {
	return ownmember.Get(ctx, r.Client, r.ClusterName)
}
