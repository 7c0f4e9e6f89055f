package scenarios

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/scenarios/internal/harness"
)

func newClusterMember() harness.Conditioned { return &polykubev1alpha1.ClusterMember{} }

func newWorkload() harness.Conditioned { return &polykubev1alpha1.Workload{} }

// mistakeSteps: ordinary mistakes that must lose nothing (features/nothing-lost.feature).
func mistakeSteps(r *registry) {
	r.step(`^the operator of cluster "([^"]*)" is started with the cluster name "([^"]*)"$`, step2((*harness.Scenario).StartOperatorAs))
	r.step(`^a second replica of the operator of cluster "([^"]*)" is started with the cluster name "([^"]*)"$`, step2((*harness.Scenario).StartReplicaAs))
	r.step(`^the operator of cluster "([^"]*)" is rolled out again with its own name$`, step1((*harness.Scenario).RestartOperatorAsItself))
	r.step(`^the operator refuses to run, saying that this cluster is pinned to "([^"]*)" and not "([^"]*)"$`, do2((*harness.Scenario).CheckOperatorRefused))
	r.step(`^the ClusterMember "([^"]*)" in cluster "([^"]*)" reports (\w+) (True|False) with reason (\w+)$`, step5(func(s *harness.Scenario, ctx context.Context, member, cluster, condition, status, reason string) error {
		return s.AwaitConditions(ctx, []string{cluster}, newClusterMember, member,
			harness.Condition{Type: condition, Status: metav1.ConditionStatus(status), Reason: reason})
	}))
	r.step(`^the Workload "([^"]*)" in cluster "([^"]*)" reports (\w+) (True|False) with reason (\w+)(?: and a message naming "([^"]*)")?$`, step6(func(s *harness.Scenario, ctx context.Context, name, cluster, condition, status, reason, named string) error {
		want := harness.Condition{Type: condition, Status: metav1.ConditionStatus(status), Reason: reason}
		if named != "" {
			want.MessageNames = []string{named}
		}
		return s.AwaitConditions(ctx, []string{cluster}, newWorkload, name, want)
	}))
	r.step(`^Cilium in cluster "([^"]*)" goes by the cluster name "([^"]*)"$`, step2((*harness.Scenario).SetCiliumClusterName))
	r.step(`^the ClusterMember "([^"]*)" in cluster "([^"]*)" is deleted while a finalizer holds it$`, step2((*harness.Scenario).DeleteMemberHeld))
	r.step(`^the finalizer on the ClusterMember "([^"]*)" in cluster "([^"]*)" is removed$`, step2((*harness.Scenario).ReleaseMember))
	r.step(`^the operator's Flux Kustomization is deleted in every cluster$`, step0((*harness.Scenario).DeleteOperatorKustomization))
	r.step(`^the operator's Flux Kustomization is created again as "([^"]*)" in every cluster$`, step1(func(s *harness.Scenario, ctx context.Context, name string) error {
		return s.RenameOperatorKustomization(ctx, "", name)
	}))
	r.step(`^the operator's Flux Kustomization is renamed from "([^"]*)" to "([^"]*)" in every cluster$`, step2((*harness.Scenario).RenameOperatorKustomization))
	r.step(`^the Polykube CRDs, the Workload "([^"]*)" and its Deployments stay in every cluster$`, step1((*harness.Scenario).CheckNothingDeleted))
	r.step(`^the Workload "([^"]*)" is deleted in cluster "([^"]*)" leaving its objects \(--cascade=orphan\)$`, step2((*harness.Scenario).DeleteWorkloadOrphaning))
	r.step(`^Flux in cluster "([^"]*)" applies its last revision again$`, step1((*harness.Scenario).ReapplyIn))
	r.step(`^the pods of "([^"]*)" in cluster "([^"]*)" are the ones it had before$`, step2((*harness.Scenario).CheckPodsKept))
}
