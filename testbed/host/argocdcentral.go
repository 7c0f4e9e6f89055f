package host

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"path/filepath"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// Delivery argocd-central is shape (a) of issue 37, the article's: ONE Argo CD, the hub,
// delivers to every cluster. Its objects (CRDs, settings, cluster Secrets, the ApplicationSet
// and the Applications it generates) live in the first cluster's API server, and its
// processes (Redis, repo-server, application-controller and applicationset-controller) run
// beside that cluster. Every cluster is registered with the hub by a cluster Secret holding
// that cluster's admin credentials, labelled as the ApplicationSet's cluster generator
// selects, so the hub holds the credentials of the whole fleet: the one thing Polykube's own
// design avoids. `up` says so; shape (b) (delivery argocd) is the one that keeps the promise.
//
// The ApplicationSet is examples/argocd/applicationset.yaml as a user would apply it: the
// test bed only points its template's source at the test bed's Git (repoURL, targetRevision),
// the edit that example's README asks of its users.

var errCentralFault = errors.New("delivery argocd-central runs one Argo CD for every cluster: the flux fault stops one cluster's delivery, which this shape cannot do without stopping every cluster's; use a topology with delivery argocd or flux for it")

// upArgoCDCentral installs the hub in the first cluster: CRDs, settings, a cluster Secret per
// cluster, the processes, and the example's ApplicationSet; it returns when the Application
// generated for every cluster synced the seeded revision.
func (tb *Testbed) upArgoCDCentral(ctx context.Context, src, crdDir string, health map[string]string) error {
	top := tb.state.Topology
	hub := top.ArgoCDHub("")
	appset, err := testbed.LoadApplicationSet(filepath.Join(src, testbed.ExampleApplicationSet), tb.GitURL(), gitrepo.Branch)
	if err != nil {
		return err
	}
	cl, err := tb.Client(hub)
	if err != nil {
		return err
	}
	if err := testbed.ApplyCRDDir(ctx, cl, crdDir, tb.wait(topology.WaitCRDs)); err != nil {
		return err
	}
	if err := applyArgoCDSettings(ctx, cl, health, tb.wait(topology.WaitCRDs)); err != nil {
		return err
	}
	for _, c := range top.Clusters {
		labels := maps.Clone(appset.Selector)
		labels[testbed.ArgoCDClusterLabel] = c.Name
		if err := tb.applyClusterSecret(ctx, cl, c.Name, labels); err != nil {
			return err
		}
	}
	fmt.Fprintf(tb.log, " ! %s\n", testbed.CentralCredentialsNote(top))
	if err := tb.startArgoCD(ctx, hub); err != nil {
		return err
	}
	if err := cl.Patch(ctx, appset.Object, client.Apply, testbed.FieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("apply the ApplicationSet %s/%s from %s: %w", testbed.ArgoCDNamespace, testbed.ArgoCDApplicationSetName, testbed.ExampleApplicationSet, err)
	}
	return tb.forEachCluster(func(c topology.Cluster) error {
		return tb.waitSynced(ctx, c.Name, tb.state.Git.Seeded, tb.wait(topology.WaitFluxReady))
	})
}
