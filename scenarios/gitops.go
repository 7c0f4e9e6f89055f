package scenarios

import (
	"context"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func gitopsSteps(r *registry) {
	r.step(`^I commit the Workload "([^"]*)" to Git$`, step1((*harness.Scenario).CommitWorkload))
	r.step(`^I remove the Workload "([^"]*)" from Git$`, step1((*harness.Scenario).RemoveWorkload))
	r.step(`^every cluster has applied the latest Git revision$`, step0(func(s *harness.Scenario, ctx context.Context) error {
		return s.AwaitDelivered(ctx, s.Fed.Clusters(), s.Config.Wait(harness.WaitDelivery))
	}))
	r.step(`^cluster "([^"]*)" has applied the latest Git revision$`, step1(func(s *harness.Scenario, ctx context.Context, cluster string) error {
		return s.AwaitDelivered(ctx, []string{cluster}, s.Config.Wait(harness.WaitDelivery))
	}))
	r.step(`^I apply the Workload "([^"]*)" to every cluster$`, step1((*harness.Scenario).ApplyWorkload))
	r.step(`^I apply to every cluster:$`, step1(func(s *harness.Scenario, ctx context.Context, doc *godog.DocString) error {
		return s.ApplyEverywhere(ctx, []byte(doc.Content))
	}))
	r.step(`^cluster "([^"]*)" has the Workload "([^"]*)" but no Deployment for it$`, step2((*harness.Scenario).AwaitNoDeployment))
	r.step(`^each Deployment of "([^"]*)" was created by the operator of its own cluster$`, step1((*harness.Scenario).CheckOwnSlices))
	r.step(`^no cluster has the Workload "([^"]*)" or a Deployment for it$`, step1((*harness.Scenario).AwaitWorkloadGone))
	r.step(`^no Deployment of "([^"]*)" was deleted or duplicated$`, step1((*harness.Scenario).CheckNoRecreate))
}
