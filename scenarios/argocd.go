package scenarios

import (
	"context"
	"fmt"
	"strings"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func argoCDSteps(r *registry) {
	// Shape (b) says "Argo CD in every cluster", shape (a) "the hub's Argo CD ... for every
	// cluster": the same check, of the Application that delivers to each cluster.
	r.step(`^(?:Argo CD in every cluster reports|the hub's Argo CD reports, for every cluster,) the (Workload|ServiceEndpoint|DatastoreBinding) "([^"]*)" (Healthy|Progressing|Degraded)$`, func(ctx context.Context, kind, name, health string) error {
		return with(ctx, func(s *harness.Scenario) error {
			seen, err := s.AwaitArgoCDHealth(ctx, kind, name, health)
			if seen != "" {
				// In the suite's output and the test log: what the Applications say.
				fmt.Printf("scenarios: %s\n", strings.ReplaceAll(seen, "\n", "\nscenarios: "))
				godog.Logf(ctx, "%s", seen)
			}
			return err
		})
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
	r.step(`^I delete the Application the hub generated for "([^"]*)", and the ApplicationSet generates it again and it syncs$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.DeleteGeneratedApplication(ctx, cluster) })
	})
	r.step(`^every cluster still has the Polykube CRDs, the operator's namespace and Deployment, the roster and the Workload "([^"]*)"$`, func(ctx context.Context, name string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckKeptWithoutApplications(ctx, name) })
	})
	r.step(`^no Application the hub generated carries Argo CD's resources finalizer$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckNoResourcesFinalizer(ctx) })
	})
}
