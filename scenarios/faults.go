package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func faultSteps(r *registry) {
	r.step(`^the API server of cluster "([^"]*)" is stopped$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.StopAPIServer(ctx, cluster) })
	})
	r.step(`^the API server of cluster "([^"]*)" is started again$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.StartAPIServer(ctx, cluster) })
	})
	r.step(`^nothing changed in the other clusters when "([^"]*)" returned$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckOthersUnchanged(ctx, cluster) })
	})
	r.step(`^the operator of cluster "([^"]*)" is killed as soon as the change reaches it$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.KillOperatorOnDelivery(ctx, cluster) })
	})
	r.step(`^the operator of cluster "([^"]*)" is stopped$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.StopOperator(ctx, cluster) })
	})
	r.step(`^the operator of cluster "([^"]*)" is restarted$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RestartOperator(ctx, cluster) })
	})
	r.step(`^the Git server is stopped$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.StopGit(ctx) })
	})
	r.step(`^the Git server is started again$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.StartGit(ctx) })
	})
	r.step(`^the network between cluster "([^"]*)" and the other clusters is cut$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.Partition(ctx, cluster) })
	})
	r.step(`^the network between cluster "([^"]*)" and the other clusters is restored$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.HealPartition(ctx, cluster) })
	})
	r.step(`^every cluster reports that it cannot fetch from Git$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitFetchFailing(ctx) })
	})
	r.step(`^every cluster's Flux applies its last revision again$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.ReapplyEverywhere(ctx) })
	})
	r.step(`^the replicas of "([^"]*)" stay as they are while (.+)$`, func(ctx context.Context, name, while string) error {
		return with(ctx, func(s *harness.Scenario) error {
			return s.CheckReplicasHold(ctx, name, "while "+while)
		})
	})
}
