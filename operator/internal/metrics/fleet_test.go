package metrics

import (
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func TestStateMetrics_FromTheObjects(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := polykubev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	cond := func(typ string, status metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: status, Reason: reason}
	}
	failover := polykubev1alpha1.Distribution{Failover: &polykubev1alpha1.Failover{}}
	objs := []client.Object{
		&polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "absorbing"},
			Spec: polykubev1alpha1.WorkloadSpec{Distribution: failover},
			Status: polykubev1alpha1.WorkloadStatus{
				Failover:   &polykubev1alpha1.FailoverStatus{BaseReplicas: 2, ExtraReplicas: 3, EffectiveReplicas: 5},
				Conditions: []metav1.Condition{cond(polykubev1alpha1.FailoverReadyCondition, metav1.ConditionTrue, polykubev1alpha1.ReasonFailoverActive)}}},
		&polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "calm"},
			Spec: polykubev1alpha1.WorkloadSpec{Distribution: failover, Suspend: true}},
		&polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "plain"}},
		&polykubev1alpha1.ServiceEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "global"},
			Spec: polykubev1alpha1.ServiceEndpointSpec{Suspend: true}},
		&polykubev1alpha1.DatastoreBinding{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db"}},
		&polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: "east"},
			Status: polykubev1alpha1.ClusterMemberStatus{Conditions: []metav1.Condition{
				cond(polykubev1alpha1.OperatorIdentityCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonIdentityMismatch)}}},
		&polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: "west"}},
		&polykubev1alpha1.Federation{ObjectMeta: metav1.ObjectMeta{Name: "prod"},
			Status: polykubev1alpha1.FederationStatus{Conditions: []metav1.Condition{
				cond(polykubev1alpha1.ClusterIDsValidCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonDuplicateClusterID),
				cond(polykubev1alpha1.PodCIDRsDisjointCondition, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded),
				cond(polykubev1alpha1.ReadyCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonDuplicateClusterID)}}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(objs...).Build()
	col := &fleetCollector{}
	var r client.Reader = c
	col.reader.Store(&r)

	want := `
# HELP polykube_identity_refused 1 when an operator started in this cluster as another member than the one it is pinned to and refused to run (ClusterMember OperatorIdentity=False), else 0.
# TYPE polykube_identity_refused gauge
polykube_identity_refused{clustermember="east"} 1
# HELP polykube_mesh_prerequisite_failing 1 when a Federation's check of what Cilium ClusterMesh requires is False (unique cluster IDs, names, disjoint pod CIDRs, members present, the local member listed and identified), else 0.
# TYPE polykube_mesh_prerequisite_failing gauge
polykube_mesh_prerequisite_failing{condition="ClusterIDsValid",federation="prod"} 1
polykube_mesh_prerequisite_failing{condition="PodCIDRsDisjoint",federation="prod"} 0
# HELP polykube_roster_members ClusterMembers in this cluster's roster.
# TYPE polykube_roster_members gauge
polykube_roster_members 2
# HELP polykube_state_metrics_errors Kinds whose objects could not be read from the cache at this scrape (their series above are missing).
# TYPE polykube_state_metrics_errors gauge
polykube_state_metrics_errors 0
# HELP polykube_suspended 1 for each object whose spec.suspend is true: the operator changes nothing for it in this cluster.
# TYPE polykube_suspended gauge
polykube_suspended{kind="ServiceEndpoint",name="global",namespace="shop"} 1
polykube_suspended{kind="Workload",name="calm",namespace="shop"} 1
# HELP polykube_workload_failover_active 1 while this cluster absorbs a peer's deficit for the Workload (FailoverReady reason FailoverActive), else 0; only Workloads with failover.
# TYPE polykube_workload_failover_active gauge
polykube_workload_failover_active{namespace="shop",workload="absorbing"} 1
polykube_workload_failover_active{namespace="shop",workload="calm"} 0
# HELP polykube_workload_failover_extra_replicas Replicas this cluster runs for its peers' deficits on top of its own share (status.failover.extraReplicas); only Workloads with failover.
# TYPE polykube_workload_failover_extra_replicas gauge
polykube_workload_failover_extra_replicas{namespace="shop",workload="absorbing"} 3
polykube_workload_failover_extra_replicas{namespace="shop",workload="calm"} 0
`
	if err := testutil.CollectAndCompare(col, strings.NewReader(want)); err != nil {
		t.Error(err)
	}
}

// Without a reader (no manager yet) a scrape yields nothing rather than failing.
func TestStateMetrics_NoReaderYet(t *testing.T) {
	if n := testutil.CollectAndCount(prometheus.Collector(&fleetCollector{})); n != 0 {
		t.Errorf("%d series without a reader, want 0", n)
	}
}
