package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// installSteps: Polykube installed from its release in a registry, as a user installs it
// (features/install-from-registry.feature).
func installSteps(r *registry) {
	r.step(`^a release of this tree is published to the test bed's registry$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.PublishRelease(ctx) })
	})
	r.step(`^cluster "([^"]*)" installs Polykube from the release's Flux artifact in the registry$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.InstallFromRegistry(ctx, cluster) })
	})
	r.step(`^the operator Deployment Flux applied in cluster "([^"]*)" names the release's image by digest and the cluster's name$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckReleaseDeployment(ctx, cluster) })
	})
	r.step(`^cluster "([^"]*)" runs the operator binary of that image, pulled from the registry$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.RunOperatorFromRegistry(ctx, cluster) })
	})
}
