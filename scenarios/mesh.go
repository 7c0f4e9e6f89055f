package scenarios

import (
	"context"
	"fmt"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func meshSteps(r *registry) {
	r.step(`^every cluster has the Service "([^"]*)" with port (\d+) to (\d+) and the annotations:$`, step4(func(s *harness.Scenario, ctx context.Context, name string, port, target int32, table *godog.Table) error {
		rows, err := tableRows(table, "annotation", "value")
		if err != nil {
			return err
		}
		annotations := map[string]string{}
		for _, row := range rows {
			annotations[row["annotation"]] = row["value"]
		}
		return s.AwaitService(ctx, name, harness.ServicePort{Port: port, TargetPort: target}, annotations)
	}))
	r.step(`^the Service "([^"]*)" selects the pods of the Workload "([^"]*)" in every cluster$`, step2((*harness.Scenario).CheckServiceSelectsWorkload))
}

// meshViewSteps are the steps about what each cluster sees of its peers through the mesh: the
// EndpointSlices Cilium mirrors for a global Service (on kwok, the test bed's mesh mirror).
func meshViewSteps(r *registry) {
	r.step(`^every cluster's endpoints of global Services are mirrored into the others$`, step0((*harness.Scenario).CheckMeshMirror))
	r.step(`^every cluster sees through the mesh the ready replicas of "([^"]*)" in every other cluster$`, step1((*harness.Scenario).AwaitMeshView))
	r.step(`^the clusters other than "([^"]*)" no longer see its endpoints of "([^"]*)" through the mesh$`, step2((*harness.Scenario).AwaitMeshLost))
	r.step(`^"([^"]*)" was gone from the mesh for less than the detectAfter of "([^"]*)"$`, step2(func(s *harness.Scenario, ctx context.Context, cluster, workload string) error {
		line, err := s.CheckBlipShorter(cluster, workload)
		if err == nil {
			fmt.Print(line)
			godog.Logf(ctx, "%s", line)
		}
		return err
	}))
}
