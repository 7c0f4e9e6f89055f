package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// Steps of features/suspend.feature.
func suspendSteps(r *registry) {
	r.step(`^I commit to Git the Workload "([^"]*)" (suspended|resumed)$`, step2(func(s *harness.Scenario, ctx context.Context, name, state string) error {
		return s.CommitSuspend(ctx, name, state == "suspended")
	}))
	r.step(`^every operator reports the Workload "([^"]*)" suspended$`, step1((*harness.Scenario).AwaitSuspended))
}
