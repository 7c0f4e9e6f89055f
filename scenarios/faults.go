package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
	"github.com/polykube/polykube/testbed"
)

func faultSteps(r *registry) {
	r.step(`^the API server of cluster "([^"]*)" is stopped$`, stopsIn(testbed.FaultAPIServer))
	r.step(`^the API server of cluster "([^"]*)" is started again$`, step1((*harness.Scenario).StartAPIServer))
	r.step(`^nothing changed in the other clusters when "([^"]*)" returned$`, step1((*harness.Scenario).CheckOthersUnchanged))
	r.step(`^the operator of cluster "([^"]*)" is killed as soon as the change reaches it$`, step1((*harness.Scenario).KillOperatorOnDelivery))
	r.step(`^the operator of cluster "([^"]*)" is stopped$`, stopsIn(testbed.FaultOperator))
	r.step(`^the operator of cluster "([^"]*)" is restarted$`, startsIn(testbed.FaultOperator))
	r.step(`^the Git server is stopped$`, stops(testbed.FaultGit))
	r.step(`^the Git server is started again$`, starts(testbed.FaultGit))
	r.step(`^the network between cluster "([^"]*)" and the other clusters is cut$`, stopsIn(testbed.FaultNetwork))
	r.step(`^the network between cluster "([^"]*)" and the other clusters is restored$`, startsIn(testbed.FaultNetwork))
	r.step(`^every cluster reports that it cannot fetch from Git$`, step0((*harness.Scenario).AwaitFetchFailing))
	r.step(`^every cluster's Flux applies its last revision again$`, step0((*harness.Scenario).ReapplyEverywhere))
	r.step(`^the replicas of "([^"]*)" stay as they are while (.+)$`, step2(func(s *harness.Scenario, ctx context.Context, name, while string) error {
		return s.CheckReplicasHold(ctx, name, "while "+while)
	}))
}

// stopsIn is the handler of a step that puts fault f in effect in the cluster it names (the
// scenario's teardown ends it); startsIn ends it. stops and starts are those of a fault of the
// whole federation (testbed.FaultKind.PerCluster false).
func stopsIn(f testbed.Fault) func(context.Context, string) error {
	return step1(func(s *harness.Scenario, ctx context.Context, cluster string) error {
		return s.InjectFault(ctx, f, cluster)
	})
}

func startsIn(f testbed.Fault) func(context.Context, string) error {
	return step1(func(s *harness.Scenario, ctx context.Context, cluster string) error {
		return s.EndFault(ctx, f, cluster)
	})
}

func stops(f testbed.Fault) func(context.Context) error {
	return step0(func(s *harness.Scenario, ctx context.Context) error { return s.InjectFault(ctx, f, "") })
}

func starts(f testbed.Fault) func(context.Context) error {
	return step0(func(s *harness.Scenario, ctx context.Context) error { return s.EndFault(ctx, f, "") })
}
