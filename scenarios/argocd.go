package scenarios

import (
	"github.com/polykube/polykube/scenarios/internal/harness"
)

func argoCDSteps(r *registry) {
	r.step(`^Argo CD in every cluster reports the (Workload|ServiceEndpoint|DatastoreBinding) "([^"]*)" (Healthy|Progressing|Degraded)$`, step3((*harness.Scenario).AwaitArgoCDHealth))
	r.step(`^I delete the Application "([^"]*)" in every cluster with Argo CD's foreground cascade$`, step1((*harness.Scenario).DeleteApplicationCascading))
	r.step(`^every cluster still has the Polykube CRDs, the operator's namespace and the Workload "([^"]*)", and no longer the operator's Deployment$`, step1((*harness.Scenario).CheckKeptByArgoCD))
	r.step(`^I create the Application "([^"]*)" again in every cluster$`, step1((*harness.Scenario).RecreateApplication))
	r.step(`^a commit drops the ClusterMember "([^"]*)" from the roster in Git, and Argo CD prunes it with its foreground cascade$`, step1((*harness.Scenario).DropMemberFromRoster))
	r.step(`^the roster in Git is restored$`, step0((*harness.Scenario).RestoreRoster))
}
