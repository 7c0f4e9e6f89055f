package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// Steps of features/suspend.feature.
func suspendSteps(r *registry) {
	r.step(`^I commit to Git the Workload "([^"]*)" (suspended|resumed)$`, func(ctx context.Context, name, state string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CommitSuspend(ctx, name, state == "suspended") })
	})
	r.step(`^every operator reports the Workload "([^"]*)" suspended$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitSuspended(ctx, name) })
	})
}
