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

	// The Helm chart and install.yaml (features/install-with-helm-or-kubectl.feature).
	r.step(`^the release's Helm chart is pushed to the test bed's registry$`, step0((*harness.Scenario).PushChart))
	r.step(`^Flux no longer delivers the operator of cluster "([^"]*)"$`, step1((*harness.Scenario).HandOverOperator))
	r.step(`^installing the release's chart from the registry into cluster "([^"]*)" without clusterName fails at render, saying to set it, and changes nothing$`, step1((*harness.Scenario).CheckHelmInstallRefused))
	r.step(`^cluster "([^"]*)" installs the release's chart from the registry with clusterName "([^"]*)"$`, step2((*harness.Scenario).HelmInstall))
	r.step(`^the operator Deployment in cluster "([^"]*)" names the release's image by digest and the cluster's name$`, step1((*harness.Scenario).CheckReleaseDeployment))
	r.step(`^the Helm release is uninstalled from cluster "([^"]*)"$`, step1((*harness.Scenario).HelmUninstall))
	r.step(`^cluster "([^"]*)" keeps Polykube's CRDs, its namespace and the Workload "([^"]*)"$`, step2((*harness.Scenario).CheckPolykubeKept))
	r.step(`^the release's install\.yaml, its cluster name left as it is, is applied server-side to cluster "([^"]*)"$`, step1(func(s *harness.Scenario, ctx context.Context, cluster string) error {
		return s.ApplyInstallYAML(ctx, cluster, "", true)
	}))
	r.step(`^the release's install\.yaml with the cluster name "([^"]*)" is applied server-side to cluster "([^"]*)"$`, step2(func(s *harness.Scenario, ctx context.Context, name, cluster string) error {
		return s.ApplyInstallYAML(ctx, cluster, name, true)
	}))
	r.step(`^the release's install\.yaml with the cluster name "([^"]*)" applies client-side to cluster "([^"]*)" too$`, step2(func(s *harness.Scenario, ctx context.Context, name, cluster string) error {
		return s.ApplyInstallYAML(ctx, cluster, name, false)
	}))
	r.step(`^the operator of cluster "([^"]*)" refuses to start, saying which value to set$`, step1((*harness.Scenario).CheckOperatorRefusesToStart))
	r.step(`^cluster "([^"]*)" still runs the operator binary it ran before$`, step1((*harness.Scenario).CheckOperatorBinaryKept))
}
