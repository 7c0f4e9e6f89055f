package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// installSteps: Polykube installed from its release in a registry, as a user installs it
// (features/install-from-registry.feature).
func installSteps(r *registry) {
	r.step(`^a release of this tree is published to the test bed's registry$`, step0(func(s *harness.Scenario, ctx context.Context) error {
		return s.PublishRelease(ctx, false)
	}))
	r.step(`^a release of this tree, signed with a key the clusters do not trust, is published to the test bed's registry$`, step0(func(s *harness.Scenario, ctx context.Context) error {
		return s.PublishRelease(ctx, true)
	}))
	r.step(`^cluster "([^"]*)" is pointed at the release's Flux artifact in the registry$`, step1((*harness.Scenario).PointAtRelease))
	r.step(`^Flux in cluster "([^"]*)" verified the cosign signature of the release's artifact$`, step1((*harness.Scenario).CheckArtifactVerified))
	r.step(`^Flux in cluster "([^"]*)" refuses the release's artifact: its signature does not verify$`, step1((*harness.Scenario).AwaitReleaseRefused))
	r.step(`^cluster "([^"]*)" still runs the operator it ran before$`, step1((*harness.Scenario).CheckOperatorKept))
	r.step(`^cluster "([^"]*)" installs Polykube from the release's Flux artifact in the registry$`, step1((*harness.Scenario).InstallFromRegistry))
	r.step(`^the operator Deployment Flux applied in cluster "([^"]*)" names the release's image by digest and the cluster's name$`, step1((*harness.Scenario).CheckReleaseDeployment))
	r.step(`^cluster "([^"]*)" runs the operator binary of that image, pulled from the registry$`, step1((*harness.Scenario).RunOperatorFromRegistry))
}
