package scenarios

import (
	"context"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// upgradeSteps: one cluster at a time from the previous release's operator to this tree's
// (features/upgrade.feature).
func upgradeSteps(r *registry) {
	r.step(`^every cluster runs the operator of the previous release$`, step0((*harness.Scenario).RunPreviousOperators))
	r.step(`^I record every pod and every managed object in every cluster$`, step0((*harness.Scenario).RememberFleet))
	r.step(`^cluster "([^"]*)" moves to the operator of (this|the previous) release$`, step2(func(s *harness.Scenario, ctx context.Context, cluster, which string) error {
		return s.MoveOperator(ctx, cluster, versionWord(which))
	}))
	r.step(`^no pod restarted and no object was deleted, replaced or rewritten in any cluster$`, step0((*harness.Scenario).CheckFleetKept))
	r.step(`^polykube-status shows each cluster's operator version:$`, step1(func(s *harness.Scenario, ctx context.Context, table *godog.Table) error {
		rows, err := tableRows(table, "cluster", "release")
		if err != nil {
			return err
		}
		want := map[string]string{}
		for _, row := range rows {
			want[row["cluster"]] = versionWord(row["release"])
		}
		return s.CheckVersions(ctx, want)
	}))
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
