package workload

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// roster is the ClusterMembers as the cache holds them, copied into a list once per change of
// the cache, not once per reconcile: listing them through the client copies every member into
// the list (meta.SetList), which at 511 members was a large part of a reconcile's cost
// (issue 40).
//
// A change is seen by the identity of the cache's objects: the informer stores a new object for
// every version it receives and never changes one it stored, and the list holds on to the
// objects it was copied from (so their addresses cannot be reused). The same objects, as many,
// are the same roster; anything else is copied again.
type roster struct {
	// store is the ClusterMember informer's store; nil (a fake client in tests, or a cache
	// whose informer is not client-go's) lists through the client each time.
	store toolscache.Store

	mu    sync.Mutex
	from  map[*polykubev1alpha1.ClusterMember]struct{}
	items []polykubev1alpha1.ClusterMember
}

// members is the roster, in name order when read from the store. The list is shared between reconciles: it is only read (placement is
// pure), never changed or appended to.
func (r *Reconciler) members(ctx context.Context) ([]polykubev1alpha1.ClusterMember, error) {
	if r.roster.store == nil {
		list := &polykubev1alpha1.ClusterMemberList{}
		// The cache's own objects, not a deep copy of every member per reconcile.
		if err := r.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		return list.Items, nil
	}
	objs := r.roster.store.List()
	ro := &r.roster
	ro.mu.Lock()
	defer ro.mu.Unlock()
	if ro.from != nil && len(ro.from) == len(objs) && sameObjects(ro.from, objs) {
		return ro.items, nil
	}
	from := make(map[*polykubev1alpha1.ClusterMember]struct{}, len(objs))
	items := make([]polykubev1alpha1.ClusterMember, 0, len(objs))
	for _, o := range objs {
		m, ok := o.(*polykubev1alpha1.ClusterMember)
		if !ok {
			return nil, fmt.Errorf("the ClusterMember cache holds a %T", o)
		}
		from[m] = struct{}{}
		items = append(items, *m)
	}
	// In name order: the targets resolved from it then need no sort (placement.ResolveTargets).
	slices.SortFunc(items, func(a, b polykubev1alpha1.ClusterMember) int { return strings.Compare(a.Name, b.Name) })
	ro.from, ro.items = from, items
	return items, nil
}

// sameObjects reports whether every object is one of from (the caller compared the counts).
func sameObjects(from map[*polykubev1alpha1.ClusterMember]struct{}, objs []any) bool {
	for _, o := range objs {
		m, ok := o.(*polykubev1alpha1.ClusterMember)
		if !ok {
			return false
		}
		if _, ok := from[m]; !ok {
			return false
		}
	}
	return true
}
