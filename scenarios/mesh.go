package scenarios

import (
	"context"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func meshSteps(r *registry) {
	r.step(`^every cluster has the Service "([^"]*)" with port (\d+) to (\d+) and the annotations:$`, func(ctx context.Context, name string, port, target int32, table *godog.Table) error {
		return with(ctx, func(s *harness.Scenario) error {
			rows, err := tableRows(table, "annotation", "value")
			if err != nil {
				return err
			}
			annotations := map[string]string{}
			for _, row := range rows {
				annotations[row["annotation"]] = row["value"]
			}
			return s.AwaitService(ctx, name, harness.ServicePort{Port: port, TargetPort: target}, annotations)
		})
	})
	r.step(`^the Service "([^"]*)" selects the pods of the Workload "([^"]*)" in every cluster$`, func(ctx context.Context, service, workload string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckServiceSelectsWorkload(ctx, service, workload) })
	})
}
