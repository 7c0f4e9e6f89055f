package serviceendpoint

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Observation is what one reconcile found, the input of the Ready condition.
type Observation struct {
	// Service is "namespace/name" of the Service the ServiceEndpoint wants.
	Service string
	// Settings are the annotations it carries.
	Settings Settings
	// Conflict, when set, says who owns a Service of that name that this ServiceEndpoint did not
	// create; the Service was left untouched.
	Conflict string
	// Err is an API error that stopped the reconcile.
	Err error
	// Workload is the referenced Workload's name; WorkloadFound tells whether it exists here.
	Workload      string
	WorkloadFound bool
	// Targeted is true when the Workload lists this cluster among its targets.
	Targeted bool
	// MemberReason and MemberMessage are set while this cluster's own ClusterMember is
	// terminating (package ownmember): Targeted then says nothing, since the Workload changes
	// nothing here and keeps running what it ran.
	MemberReason, MemberMessage string
	// LocalReplicas is the Workload's allocation for this cluster, when it could be computed.
	LocalReplicas *int32
	// Cluster is this cluster's name.
	Cluster string
	// ReadyEndpoints is the count of ready local endpoints of the Service.
	ReadyEndpoints int32
	// SyncEndpointSlices is true when the Service asks Cilium to mirror the peers' endpoints:
	// it is global and the Workload has spec.distribution.failover.
	SyncEndpointSlices bool
}

// ReadyCondition is the Ready condition for an observation.
//
//   - False/ReconcileFailed: the API server refused a read or write; the reconcile is retried.
//   - False/Conflict: a Service of that name exists and this ServiceEndpoint did not create it;
//     the Service is left as it is.
//   - True/WorkloadNotFound: the Service is in place as specified, but the Workload it selects
//     does not exist in this namespace, so it has no local backends.
//   - False/ClusterMemberTerminating: the Service is in place, but this cluster's own
//     ClusterMember is being deleted, so the Workload changes nothing here (it keeps running
//     what it ran).
//   - True/NotTargeted: the Service is in place; the Workload runs nowhere in this cluster (on
//     purpose: ClusterMesh needs the Service in every member).
//   - True/Succeeded: the Service is in place as specified.
func ReadyCondition(o Observation) metav1.Condition {
	cond := func(status metav1.ConditionStatus, reason, format string, args ...any) metav1.Condition {
		return metav1.Condition{Type: polykubev1alpha1.ReadyCondition, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	remote := ""
	if o.Settings.Global {
		remote = "; clients here reach the other members' backends through ClusterMesh"
	}
	switch {
	case o.Err != nil:
		return cond(metav1.ConditionFalse, polykubev1alpha1.ReasonReconcileFailed,
			"%v; the operator retries", o.Err)
	case o.Conflict != "":
		return cond(metav1.ConditionFalse, polykubev1alpha1.ReasonConflict,
			"Service %s exists and was not created by this ServiceEndpoint (%s); Polykube never adopts or changes an object it did not create: delete or rename that Service, or give the ServiceEndpoint another name",
			o.Service, o.Conflict)
	case !o.WorkloadFound:
		return cond(metav1.ConditionTrue, polykubev1alpha1.ReasonWorkloadNotFound,
			"Service %s is in place (%s), but Workload %q does not exist in this namespace, so the Service has no local backends%s",
			o.Service, o.Settings, o.Workload, remote)
	case o.MemberReason != "":
		return cond(metav1.ConditionFalse, o.MemberReason,
			"Service %s is in place (%s) with %d ready local endpoints; %s",
			o.Service, o.Settings, o.ReadyEndpoints, o.MemberMessage)
	case !o.Targeted:
		return cond(metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted,
			"Service %s is in place (%s); Workload %q does not target cluster %q, so the Service has no local backends%s",
			o.Service, o.Settings, o.Workload, o.Cluster, remote)
	case o.LocalReplicas != nil && *o.LocalReplicas == 0:
		return cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded,
			"Service %s is in place (%s); Workload %q runs 0 replicas in cluster %q%s",
			o.Service, o.Settings, o.Workload, o.Cluster, remote)
	default:
		return cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded,
			"Service %s is in place (%s) with %d ready local endpoints",
			o.Service, o.Settings, o.ReadyEndpoints)
	}
}

// isTransition tells whether c changes the status or reason of its condition type. A condition
// seen for the first time counts unless it reports plain success, so that creating a healthy
// object emits no events.
func isTransition(previous []metav1.Condition, c metav1.Condition) bool {
	prev := meta.FindStatusCondition(previous, c.Type)
	if prev == nil {
		return c.Status != metav1.ConditionTrue || c.Reason != polykubev1alpha1.ReasonSucceeded
	}
	return prev.Status != c.Status || prev.Reason != c.Reason
}
