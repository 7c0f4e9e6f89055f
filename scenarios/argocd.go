package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func argoCDSteps(r *registry) {
	r.step(`^Argo CD in every cluster reports the (Workload|ServiceEndpoint|DatastoreBinding) "([^"]*)" (Healthy|Progressing|Degraded)$`, func(ctx context.Context, kind, name, health string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitArgoCDHealth(ctx, kind, name, health) })
	})
	r.step(`^I delete the Application "([^"]*)" in every cluster with Argo CD's foreground cascade$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.DeleteApplicationCascading(ctx, name) })
	})
	r.step(`^every cluster still has the Polykube CRDs, the operator's namespace and the Workload "([^"]*)", and no longer the operator's Deployment$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckKeptByArgoCD(ctx, name) })
	})
	r.step(`^I create the Application "([^"]*)" again in every cluster$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RecreateApplication(ctx, name) })
	})
	r.step(`^a commit drops the ClusterMember "([^"]*)" from the roster in Git, and Argo CD prunes it with its foreground cascade$`, func(ctx context.Context, member string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.DropMemberFromRoster(ctx, member) })
	})
	r.step(`^the roster in Git is restored$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RestoreRoster(ctx) })
	})
}
