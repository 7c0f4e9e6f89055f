package scenarios

import (
	"context"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// upgradeSteps: one cluster at a time from the previous release's operator to this tree's
// (features/upgrade.feature).
func upgradeSteps(r *registry) {
	r.step(`^every cluster runs the operator of the previous release$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RunPreviousOperators(ctx) })
	})
	r.step(`^I record every pod and every managed object in every cluster$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RememberFleet(ctx) })
	})
	r.step(`^cluster "([^"]*)" moves to the operator of (this|the previous) release$`, func(ctx context.Context, cluster, which string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.MoveOperator(ctx, cluster, versionWord(which)) })
	})
	r.step(`^no pod restarted and no object was deleted, replaced or rewritten in any cluster$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckFleetKept(ctx) })
	})
	r.step(`^polykube-status shows each cluster's operator version:$`, func(ctx context.Context, table *godog.Table) error {
		return with(ctx, func(s *harness.Scenario) error {
			rows, err := tableRows(table, "cluster", "release")
			if err != nil {
				return err
			}
			want := map[string]string{}
			for _, row := range rows {
				want[row["cluster"]] = versionWord(row["release"])
			}
			return s.CheckVersions(ctx, want)
		})
	})
}

// versionWord maps the features' words for the two releases to the harness's.
func versionWord(w string) string {
	switch w {
	case "this":
		return harness.VersionThis
	case "the previous", "previous":
		return harness.VersionPrevious
	}
	return w
}
