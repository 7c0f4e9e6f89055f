package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// installSteps: Polykube installed from its release in a registry, as a user installs it
// (features/install-from-registry.feature).
func installSteps(r *registry) {
	r.step(`^a release of this tree is published to the test bed's registry$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.PublishRelease(ctx, false) })
	})
	r.step(`^a release of this tree, signed with a key the clusters do not trust, is published to the test bed's registry$`, func(ctx context.Context) error {
		return with(ctx, func(s *harness.Scenario) error { return s.PublishRelease(ctx, true) })
	})
	r.step(`^cluster "([^"]*)" is pointed at the release's Flux artifact in the registry$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.PointAtRelease(ctx, cluster) })
	})
	r.step(`^Flux in cluster "([^"]*)" verified the cosign signature of the release's artifact$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckArtifactVerified(ctx, cluster) })
	})
	r.step(`^Flux in cluster "([^"]*)" refuses the release's artifact: its signature does not verify$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.AwaitReleaseRefused(ctx, cluster) })
	})
	r.step(`^cluster "([^"]*)" still runs the operator it ran before$`, func(ctx context.Context, cluster string) error {
		return with(ctx, func(s *harness.Scenario) error { return s.CheckOperatorKept(ctx, cluster) })
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
