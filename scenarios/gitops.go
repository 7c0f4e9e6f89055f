package scenarios

import (
	"context"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func gitopsSteps(r *registry) {
	r.step(`^I commit the Workload "([^"]*)" to Git$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CommitWorkload(ctx, name) })
	})
	r.step(`^I remove the Workload "([^"]*)" from Git$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RemoveWorkload(ctx, name) })
	})
	r.step(`^every cluster has applied the latest Git revision$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error {
			return s.AwaitDelivered(ctx, s.Fed.Clusters(), s.Config.Wait(harness.WaitDelivery))
		})
	})
	r.step(`^cluster "([^"]*)" has applied the latest Git revision$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error {
			return s.AwaitDelivered(ctx, []string{cluster}, s.Config.Wait(harness.WaitDelivery))
		})
	})
	r.step(`^I apply the Workload "([^"]*)" to every cluster$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.ApplyWorkload(ctx, name) })
	})
	r.step(`^I commit to Git, in the scenario's namespace:$`, func(ctx context.Context, doc *godog.DocString) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CommitManifests(ctx, []byte(doc.Content)) })
	})
	r.step(`^I apply to every cluster:$`, func(ctx context.Context, doc *godog.DocString) error {
		return with(ctx, func(s *harness.Scenario) error { return s.ApplyEverywhere(ctx, []byte(doc.Content)) })
	})
	r.step(`^cluster "([^"]*)" has the Workload "([^"]*)" but no Deployment for it$`, func(ctx context.Context, cluster, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitNoDeployment(ctx, cluster, name) })
	})
	r.step(`^each Deployment of "([^"]*)" was created by the operator of its own cluster$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckOwnSlices(ctx, name) })
	})
	r.step(`^no cluster has the Workload "([^"]*)" or a Deployment for it$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitWorkloadGone(ctx, name) })
	})
	r.step(`^no Deployment of "([^"]*)" was deleted or duplicated$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckNoRecreate(ctx, name) })
	})
}
