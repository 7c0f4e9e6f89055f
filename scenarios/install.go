package scenarios

import (
	"github.com/polykube/polykube/scenarios/internal/harness"
)

// installSteps: Polykube installed from its release in a registry, as a user installs it
// (features/install-from-registry.feature).
func installSteps(r *registry) {
	r.step(`^a release of this tree is published to the test bed's registry$`, step0((*harness.Scenario).PublishRelease))
	r.step(`^cluster "([^"]*)" installs Polykube from the release's Flux artifact in the registry$`, step1((*harness.Scenario).InstallFromRegistry))
	r.step(`^the operator Deployment Flux applied in cluster "([^"]*)" names the release's image by digest and the cluster's name$`, step1((*harness.Scenario).CheckReleaseDeployment))
	r.step(`^cluster "([^"]*)" runs the operator binary of that image, pulled from the registry$`, step1((*harness.Scenario).RunOperatorFromRegistry))
}
