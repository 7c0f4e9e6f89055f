package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func argoCDSteps(r *registry) {
	r.step(`^Argo CD in every cluster reports the (Workload|ServiceEndpoint|DatastoreBinding) "([^"]*)" (Healthy|Progressing|Degraded)$`, func(ctx context.Context, kind, name, health string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitArgoCDHealth(ctx, kind, name, health) })
	})
}
