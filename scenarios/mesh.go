package scenarios

import (
	"context"
	"fmt"

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

// meshViewSteps are the steps about what each cluster sees of its peers through the mesh: the
// EndpointSlices Cilium mirrors for a global Service (on kwok, the test bed's mesh mirror).
func meshViewSteps(r *registry) {
	r.step(`^every cluster's endpoints of global Services are mirrored into the others$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckMeshMirror(ctx) })
	})
	r.step(`^every cluster sees through the mesh the ready replicas of "([^"]*)" in every other cluster$`, func(ctx context.Context, workload string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitMeshView(ctx, workload) })
	})
	r.step(`^the clusters other than "([^"]*)" no longer see its endpoints of "([^"]*)" through the mesh$`, func(ctx context.Context, cluster, workload string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitMeshLost(ctx, cluster, workload) })
	})
	r.step(`^"([^"]*)" was gone from the mesh for less than the detectAfter of "([^"]*)"$`, func(ctx context.Context, cluster, workload string) error {
		return with(ctx, func(s *harness.Scenario) error {
			line, err := s.CheckBlipShorter(cluster, workload)
			if err == nil {
				fmt.Print(line)
				godog.Logf(ctx, "%s", line)
			}
			return err
		})
	})
}
