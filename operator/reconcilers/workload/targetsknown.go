package workload

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// setTargetsKnown sets the Workload's TargetsKnown condition: a clusterRef that no ClusterMember
// of the roster is named after gets its replicas in the allocation (every cluster computes the
// same split, so none can drop it on its own) and runs them nowhere. Said on the Workload, a typo
// is found; otherwise every cluster reports Ready. roster is the list step 1 read, or nil when
// it read none (the Workload has no targetSelectors): then the cached ClusterMembers are listed.
func (r *Reconciler) setTargetsKnown(ctx context.Context, wl *polykubev1alpha1.Workload, roster []polykubev1alpha1.ClusterMember, listed bool) error {
	if len(wl.Spec.Distribution.Targets) == 0 {
		meta.RemoveStatusCondition(&wl.Status.Conditions, polykubev1alpha1.TargetsKnownCondition)
		return nil
	}
	if !listed {
		var err error
		if roster, err = r.members(ctx); err != nil {
			return fmt.Errorf("list ClusterMembers to check the targets of Workload %s/%s: %w", wl.Namespace, wl.Name, err)
		}
	}
	status, reason, msg := targetsKnownCondition(unknownTargets(wl.Spec.Distribution, roster))
	setCondition(&wl.Status.Conditions, wl.Generation, polykubev1alpha1.TargetsKnownCondition, status, reason, msg)
	return nil
}

// unknownTargets are the clusterRefs of spec.distribution.targets that no ClusterMember of the
// roster is named after, in spec order. A terminating member is still known.
func unknownTargets(d polykubev1alpha1.Distribution, roster []polykubev1alpha1.ClusterMember) []string {
	known := make(map[string]bool, len(roster))
	for _, m := range roster {
		known[m.Name] = true
	}
	var out []string
	for _, t := range d.Targets {
		if !known[t.ClusterRef] {
			out = append(out, t.ClusterRef)
		}
	}
	return out
}

// targetsKnownCondition is the TargetsKnown condition for the unknown clusterRefs.
func targetsKnownCondition(unknown []string) (metav1.ConditionStatus, string, string) {
	if len(unknown) == 0 {
		return metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded,
			"every cluster spec.distribution.targets names has a ClusterMember in this cluster's roster"
	}
	quoted := make([]string, len(unknown))
	for i, u := range unknown {
		quoted[i] = fmt.Sprintf("%q", u)
	}
	return metav1.ConditionFalse, polykubev1alpha1.ReasonUnknownTargets, fmt.Sprintf(
		"spec.distribution.targets names %s, but no ClusterMember of this cluster's roster is named so: their replicas run nowhere; "+
			"fix the clusterRef (a typo?) or add the ClusterMember to the roster in Git (`kubectl get clustermembers` lists the names)",
		listed(quoted, len(quoted)))
}

// namesTarget is true when the Workload's spec.distribution.targets names the cluster.
func namesTarget(wl *polykubev1alpha1.Workload, cluster string) bool {
	for _, t := range wl.Spec.Distribution.Targets {
		if t.ClusterRef == cluster {
			return true
		}
	}
	return false
}
