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
	// cluster": the same check, of the Application that delivers to each cluster. What the
	// Applications say goes to the suite's output and the test log.
	r.step(`^(?:Argo CD in every cluster reports|the hub's Argo CD reports, for every cluster,) the (Workload|ServiceEndpoint|DatastoreBinding) "([^"]*)" (Healthy|Progressing|Degraded)$`, step3(func(s *harness.Scenario, ctx context.Context, kind, name, health string) error {
		seen, err := s.AwaitArgoCDHealth(ctx, kind, name, health)
		if seen != "" {
			fmt.Printf("scenarios: %s\n", strings.ReplaceAll(seen, "\n", "\nscenarios: "))
			godog.Logf(ctx, "%s", seen)
		}
		return err
	}))
	r.step(`^I delete the Application "([^"]*)" in every cluster with Argo CD's foreground cascade$`, step1((*harness.Scenario).DeleteApplicationCascading))
	r.step(`^every cluster still has the Polykube CRDs, the operator's namespace and the Workload "([^"]*)", and no longer the operator's Deployment$`, step1((*harness.Scenario).CheckKeptByArgoCD))
	r.step(`^I create the Application "([^"]*)" again in every cluster$`, step1((*harness.Scenario).RecreateApplication))
	r.step(`^a commit drops the ClusterMember "([^"]*)" from the roster in Git, and Argo CD prunes it with its foreground cascade$`, step1((*harness.Scenario).DropMemberFromRoster))
	r.step(`^the roster in Git is restored$`, step0((*harness.Scenario).RestoreRoster))
	r.step(`^I delete the Application the hub generated for "([^"]*)", and the ApplicationSet generates it again and it syncs$`, step1((*harness.Scenario).DeleteGeneratedApplication))
	r.step(`^every cluster still has the Polykube CRDs, the operator's namespace and Deployment, the roster and the Workload "([^"]*)"$`, step1((*harness.Scenario).CheckKeptWithoutApplications))
	r.step(`^no Application the hub generated carries Argo CD's resources finalizer$`, step0((*harness.Scenario).CheckNoResourcesFinalizer))
}
