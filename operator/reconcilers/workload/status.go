package workload

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// The reasons of the Workload's conditions.
//
// Allocated: True/Succeeded when the distribution yields an allocation; False/InvalidSpec when
// it does not (the spec must be fixed; the reconciler does not retry).
//
// Ready (the summary, for this cluster's slice only):
//   - True/Succeeded: the local Deployment has every desired replica ready and updated. For an
//     autoscaled Workload the desired replicas are the Deployment's own spec.replicas, which
//     its HPA sets within this cluster's bounds: scaling is not a difference to report.
//   - True/NotTargeted: this cluster is not a target; nothing runs here.
//   - False/InvalidSpec: the distribution cannot be allocated, spec.overrides cannot be
//     rendered (placement.EffectiveTemplate; the message names the override), or the API
//     server refuses the Deployment or HPA rendered from the spec (the message quotes it).
//   - False/ClusterUnknown: no ClusterMember is named after this operator's --cluster-name.
//   - False/ClusterMemberTerminating: this cluster's ClusterMember is being deleted. As with
//     ClusterUnknown, nothing is created, changed or deleted here meanwhile.
//   - False/Conflict: a Deployment or Service with the Workload's name exists and Polykube did
//     not create it for this Workload; it is left untouched.
//   - False/ForeignHPA: an HPA Polykube did not make (kubectl autoscale, KEDA) scales the
//     Deployment; its replicas are left to it, everything else is applied. The message names
//     the HPA and what to do (foreignhpa.go).
//   - False/DeploymentPending: the Deployment has no status yet.
//   - False/Progressing: the Deployment is rolling out or scaling.
//   - False/Degraded: the Deployment reports ReplicaFailure or Progressing=False.
//   - False/ReconcileFailed: an API call failed; the reconciler retries.
//
// Events carry the same reason as the condition they report. A change of Ready emits one event,
// except to DeploymentPending or Progressing, which every rollout passes through.

// observation is what the local Deployment reports.
type observation struct {
	Ready, Available, Updated int32
	Phase                     string
	// Current is the Deployment's spec.replicas when an HPA scales it (nil otherwise).
	Current *int32
}

// observe summarizes the local Deployment against the desired replicas.
func observe(dep *appsv1.Deployment, desired int32) observation {
	if dep == nil {
		return observation{Phase: polykubev1alpha1.PhasePending}
	}
	return observation{
		Ready:     dep.Status.ReadyReplicas,
		Available: dep.Status.AvailableReplicas,
		Updated:   dep.Status.UpdatedReplicas,
		Phase:     deploymentPhase(dep, desired),
	}
}

// deploymentPhase is Pending while the Deployment has no status, Degraded when it reports
// ReplicaFailure or Progressing=False, Ready when every desired replica is ready and updated
// for the current generation, else Progressing.
func deploymentPhase(dep *appsv1.Deployment, desired int32) string {
	if dep.Status.ObservedGeneration == 0 {
		return polykubev1alpha1.PhasePending
	}
	for _, c := range dep.Status.Conditions {
		if c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue {
			return polykubev1alpha1.PhaseDegraded
		}
		if c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse {
			return polykubev1alpha1.PhaseDegraded
		}
	}
	if dep.Status.ObservedGeneration >= dep.Generation &&
		dep.Status.ReadyReplicas == desired && dep.Status.UpdatedReplicas == desired &&
		dep.Status.Replicas == desired {
		return polykubev1alpha1.PhaseReady
	}
	return polykubev1alpha1.PhaseProgressing
}

// setAllocationStatus writes the allocation into the status in the layout of decision 0013:
// this cluster's own entry (Local), a digest of every target's share (Allocation), and no list
// of every target: the list an operator of an earlier release wrote (status.targets) is cleared,
// so nothing in the status grows with the roster. With alloc nil (no allocation) all three are
// cleared.
func setAllocationStatus(st *polykubev1alpha1.WorkloadStatus, alloc placement.Allocation, bounds placement.BoundsAllocation, cluster string,
	obs *observation, generation int64, now metav1.Time) {
	prev := previousLocal(st)
	st.Targets = nil
	if alloc == nil {
		st.Local, st.Allocation = nil, nil
		return
	}
	st.Local = localTarget(alloc, bounds, cluster, obs, generation, prev, now)
	st.Allocation = &polykubev1alpha1.AllocationDigest{
		Digest:              placement.AllocationDigest(alloc),
		Targets:             int32(len(alloc)),
		TargetsWithReplicas: int32(alloc.TargetsWithReplicas()),
	}
}

// previousLocal is this cluster's entry as the status last had it: Local, or the Local entry of
// the full list an operator of an earlier release wrote (nil when there is none).
func previousLocal(st *polykubev1alpha1.WorkloadStatus) *polykubev1alpha1.TargetStatus {
	if st.Local != nil {
		return st.Local
	}
	for i := range st.Targets {
		if st.Targets[i].Local {
			return &st.Targets[i]
		}
	}
	return nil
}

// localTarget is this cluster's target entry (nil when it is not a target) with the replicas
// computed here, and for an autoscaled Workload (bounds set) its HPA bounds; when obs is set it
// also carries the observation, generation and a LastUpdateTime that moves only when the entry
// changes (taken from prev otherwise).
func localTarget(alloc placement.Allocation, bounds placement.BoundsAllocation, cluster string, obs *observation, generation int64,
	prev *polykubev1alpha1.TargetStatus, now metav1.Time) *polykubev1alpha1.TargetStatus {
	replicas, ok := alloc.For(cluster)
	if !ok {
		return nil
	}
	t := polykubev1alpha1.TargetStatus{Cluster: cluster, DesiredReplicas: replicas, Local: true}
	if b, ok := bounds.For(cluster); ok {
		t.MinReplicas, t.MaxReplicas = ptr.To(b.Min), ptr.To(b.Max)
	}
	if obs != nil {
		t.ReadyReplicas = ptr.To(obs.Ready)
		t.AvailableReplicas = ptr.To(obs.Available)
		t.UpdatedReplicas = ptr.To(obs.Updated)
		t.CurrentReplicas = obs.Current
		t.Phase = obs.Phase
		t.ObservedGeneration = generation
	}
	t.LastUpdateTime = &now
	if prev != nil && prev.Cluster == t.Cluster && prev.LastUpdateTime != nil {
		cmp := *prev
		cmp.LastUpdateTime = nil
		t.LastUpdateTime = nil
		if equalTargets(cmp, t) {
			t.LastUpdateTime = prev.LastUpdateTime
		} else {
			t.LastUpdateTime = &now
		}
	}
	return &t
}

func equalTargets(a, b polykubev1alpha1.TargetStatus) bool {
	eq := func(x, y *int32) bool { return ptr.Deref(x, -1) == ptr.Deref(y, -1) }
	return a.Cluster == b.Cluster && a.DesiredReplicas == b.DesiredReplicas && a.Local == b.Local &&
		eq(a.ReadyReplicas, b.ReadyReplicas) && eq(a.AvailableReplicas, b.AvailableReplicas) &&
		eq(a.UpdatedReplicas, b.UpdatedReplicas) && eq(a.MinReplicas, b.MinReplicas) && eq(a.MaxReplicas, b.MaxReplicas) &&
		eq(a.CurrentReplicas, b.CurrentReplicas) && a.Phase == b.Phase &&
		a.ObservedGeneration == b.ObservedGeneration && a.LastUpdateTime == nil && b.LastUpdateTime == nil
}

// readyFromPhase is the Ready condition of a targeted cluster whose Deployment is reconciled.
func readyFromPhase(wl *polykubev1alpha1.Workload, obs observation, desired int32) (metav1.ConditionStatus, string, string) {
	name := wl.Namespace + "/" + wl.Name
	switch obs.Phase {
	case polykubev1alpha1.PhaseReady:
		return metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded,
			fmt.Sprintf("Deployment %s has %d/%d replicas ready", name, obs.Ready, desired)
	case polykubev1alpha1.PhaseDegraded:
		return metav1.ConditionFalse, polykubev1alpha1.ReasonDegraded,
			fmt.Sprintf("Deployment %s is degraded (ReplicaFailure or Progressing=False): %d/%d replicas ready; see `kubectl describe deployment -n %s %s`",
				name, obs.Ready, desired, wl.Namespace, wl.Name)
	case polykubev1alpha1.PhaseProgressing:
		return metav1.ConditionFalse, polykubev1alpha1.ReasonProgressing,
			fmt.Sprintf("Deployment %s is rolling out: %d/%d replicas ready, %d updated", name, obs.Ready, desired, obs.Updated)
	default:
		return metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending,
			fmt.Sprintf("Deployment %s has no status yet (%d replicas desired)", name, desired)
	}
}

// setCondition sets a condition with the Workload's generation. meta.SetStatusCondition keeps
// LastTransitionTime unless the status flips, so re-setting the same condition changes nothing.
func setCondition(conds *[]metav1.Condition, generation int64, typ string, status metav1.ConditionStatus, reason, msg string) {
	meta.SetStatusCondition(conds, metav1.Condition{
		Type: typ, Status: status, Reason: reason, Message: msg, ObservedGeneration: generation,
	})
}

// isErrorReason tells which Ready reasons count in polykube_reconcile_errors_total.
func isErrorReason(reason string) bool {
	switch reason {
	case polykubev1alpha1.ReasonInvalidSpec, polykubev1alpha1.ReasonConflict,
		polykubev1alpha1.ReasonClusterUnknown, polykubev1alpha1.ReasonClusterMemberTerminating,
		polykubev1alpha1.ReasonReconcileFailed:
		return true
	}
	return false
}
