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
	r.step(`^the operator of cluster "([^"]*)" is started with the cluster name "([^"]*)"$`, func(ctx context.Context, cluster, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.StartOperatorAs(ctx, cluster, name) })
	})
	r.step(`^a second replica of the operator of cluster "([^"]*)" is started with the cluster name "([^"]*)"$`, func(ctx context.Context, cluster, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.StartReplicaAs(ctx, cluster, name) })
	})
	r.step(`^the operator of cluster "([^"]*)" is rolled out again with its own name$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RestartOperatorAsItself(ctx, cluster) })
	})
	r.step(`^the operator refuses to run, saying that this cluster is pinned to "([^"]*)" and not "([^"]*)"$`, func(ctx context.Context, pinned, startedAs string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckOperatorRefused(pinned, startedAs) })
	})
	r.step(`^the ClusterMember "([^"]*)" in cluster "([^"]*)" reports (\w+) (True|False) with reason (\w+)$`, func(ctx context.Context, member, cluster, condition, status, reason string) error {
		return with(ctx, func(s *harness.Scenario) error {
			return s.AwaitConditions(ctx, []string{cluster}, newClusterMember, member,
				harness.Condition{Type: condition, Status: metav1.ConditionStatus(status), Reason: reason})
		})
	})
	r.step(`^the Workload "([^"]*)" in cluster "([^"]*)" reports (\w+) (True|False) with reason (\w+)(?: and a message naming "([^"]*)")?$`, func(ctx context.Context, name, cluster, condition, status, reason, named string) error {
		return with(ctx, func(s *harness.Scenario) error {
			want := harness.Condition{Type: condition, Status: metav1.ConditionStatus(status), Reason: reason}
			if named != "" {
				want.MessageNames = []string{named}
			}
			return s.AwaitConditions(ctx, []string{cluster}, newWorkload, name, want)
		})
	})
	r.step(`^Cilium in cluster "([^"]*)" goes by the cluster name "([^"]*)"$`, func(ctx context.Context, cluster, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.SetCiliumClusterName(ctx, cluster, name) })
	})
	r.step(`^the ClusterMember "([^"]*)" in cluster "([^"]*)" is deleted while a finalizer holds it$`, func(ctx context.Context, member, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.DeleteMemberHeld(ctx, cluster, member) })
	})
	r.step(`^the finalizer on the ClusterMember "([^"]*)" in cluster "([^"]*)" is removed$`, func(ctx context.Context, member, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.ReleaseMember(ctx, cluster, member) })
	})
	r.step(`^the operator's Flux Kustomization is deleted in every cluster$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.DeleteOperatorKustomization(ctx) })
	})
	r.step(`^the operator's Flux Kustomization is created again as "([^"]*)" in every cluster$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RenameOperatorKustomization(ctx, "", name) })
	})
	r.step(`^the operator's Flux Kustomization is renamed from "([^"]*)" to "([^"]*)" in every cluster$`, func(ctx context.Context, from, to string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RenameOperatorKustomization(ctx, from, to) })
	})
	r.step(`^the Polykube CRDs, the Workload "([^"]*)" and its Deployments stay in every cluster$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckNothingDeleted(ctx, name) })
	})
	r.step(`^the Workload "([^"]*)" is deleted in cluster "([^"]*)" leaving its objects \(--cascade=orphan\)$`, func(ctx context.Context, name, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.DeleteWorkloadOrphaning(ctx, cluster, name) })
	})
	r.step(`^Flux in cluster "([^"]*)" applies its last revision again$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.ReapplyIn(ctx, cluster) })
	})
	r.step(`^the pods of "([^"]*)" in cluster "([^"]*)" are the ones it had before$`, func(ctx context.Context, name, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckPodsKept(ctx, cluster, name) })
	})
}
