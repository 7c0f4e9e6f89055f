package testbed

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

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
const (
	// ExampleApplicationSet is the ApplicationSet of the Argo CD example, in the checkout.
	ExampleApplicationSet = "examples/argocd/applicationset.yaml"
	// ArgoCDApplicationSetName names that ApplicationSet.
	ArgoCDApplicationSetName = "polykube"
	// ArgoCDClusterLabel is the cluster Secret's label that carries the ClusterMember's name
	// to the ApplicationSet's template.
	ArgoCDClusterLabel = "polykube.kismet.io/cluster"
)

// ApplicationSetGVK is Argo CD's ApplicationSet, handled unstructured like the Application.
var ApplicationSetGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "ApplicationSet"}

var errCentralFault = errors.New("delivery argocd-central runs one Argo CD for every cluster: the flux fault stops one cluster's delivery, which this shape cannot do without stopping every cluster's; use a topology with delivery argocd or flux for it")

// CentralApplicationName is the name the example's ApplicationSet gives the Application of a
// cluster (its template's metadata.name); LoadApplicationSet checks that it still does.
func CentralApplicationName(cluster string) string { return "polykube-" + cluster }

// clusterLabelExpr is how the example's template reads the cluster name from the Secret's
// labels (goTemplate).
const clusterLabelExpr = `{{ index .metadata.labels "` + ArgoCDClusterLabel + `" }}`

// CentralApplicationSet is the example's ApplicationSet ready to apply to the hub, and the
// labels its cluster generator selects cluster Secrets by.
type CentralApplicationSet struct {
	Object   *unstructured.Unstructured
	Selector map[string]string
}

// LoadApplicationSet reads the example's ApplicationSet and points its template's source at
// gitURL and revision. It fails, saying what to change, when the example no longer has the
// shape the test bed relies on: its name, one cluster generator with matchLabels, and an
// Application name from the cluster label that CentralApplicationName agrees with.
func LoadApplicationSet(path, gitURL, revision string) (*CentralApplicationSet, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read the example ApplicationSet: %w", err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if obj.GroupVersionKind() != ApplicationSetGVK || obj.GetName() != ArgoCDApplicationSetName || obj.GetNamespace() != ArgoCDNamespace {
		return nil, fmt.Errorf("%s: want the ApplicationSet %s/%s, got %s %s/%s", path, ArgoCDNamespace, ArgoCDApplicationSetName, obj.GetKind(), obj.GetNamespace(), obj.GetName())
	}
	gens, _, _ := unstructured.NestedSlice(obj.Object, "spec", "generators")
	if len(gens) != 1 {
		return nil, fmt.Errorf("%s: want one generator (clusters), got %d", path, len(gens))
	}
	gen, _ := gens[0].(map[string]any)
	selector, found, err := unstructured.NestedStringMap(gen, "clusters", "selector", "matchLabels")
	if err != nil || !found || len(selector) == 0 {
		return nil, fmt.Errorf("%s: the generator must be a cluster generator selecting by matchLabels (the test bed labels its cluster Secrets with them)", path)
	}
	name, _, _ := unstructured.NestedString(obj.Object, "spec", "template", "metadata", "name")
	if got := strings.ReplaceAll(name, clusterLabelExpr, "alpha"); got != CentralApplicationName("alpha") {
		return nil, fmt.Errorf("%s: the template names the Applications %q, which the test bed reads as %q; change CentralApplicationName with it", path, name, CentralApplicationName("<cluster>"))
	}
	for field, value := range map[string]string{"repoURL": gitURL, "targetRevision": revision} {
		if _, found, _ := unstructured.NestedString(obj.Object, "spec", "template", "spec", "source", field); !found {
			return nil, fmt.Errorf("%s: the template's source has no %s to point at the test bed's Git", path, field)
		}
		if err := unstructured.SetNestedField(obj.Object, value, "spec", "template", "spec", "source", field); err != nil {
			return nil, err
		}
	}
	return &CentralApplicationSet{Object: obj, Selector: selector}, nil
}

// upArgoCDCentral installs the hub in the first cluster: CRDs, settings, a cluster Secret per
// cluster, the processes, and the example's ApplicationSet; it returns when the Application
// generated for every cluster synced the seeded revision.
func (tb *Testbed) upArgoCDCentral(ctx context.Context, src, crdDir string, health map[string]string) error {
	top := tb.state.Topology
	hub := top.ArgoCDHub("")
	appset, err := LoadApplicationSet(filepath.Join(src, ExampleApplicationSet), tb.GitURL(), gitrepo.Branch)
	if err != nil {
		return err
	}
	cl, err := tb.Client(hub)
	if err != nil {
		return err
	}
	if err := ApplyCRDDir(ctx, cl, crdDir, tb.wait(topology.WaitCRDs)); err != nil {
		return err
	}
	if err := applyArgoCDSettings(ctx, cl, health, tb.wait(topology.WaitCRDs)); err != nil {
		return err
	}
	for _, c := range top.Clusters {
		labels := maps.Clone(appset.Selector)
		labels[ArgoCDClusterLabel] = c.Name
		if err := tb.applyClusterSecret(ctx, cl, c.Name, labels); err != nil {
			return err
		}
	}
	fmt.Fprintf(tb.log, " ! %s\n", CentralCredentialsNote(top))
	if err := tb.startArgoCD(ctx, hub); err != nil {
		return err
	}
	if err := cl.Patch(ctx, appset.Object, client.Apply, fieldOwner, client.ForceOwnership); err != nil {
		return fmt.Errorf("apply the ApplicationSet %s/%s from %s: %w", ArgoCDNamespace, ArgoCDApplicationSetName, ExampleApplicationSet, err)
	}
	return tb.forEachCluster(func(c topology.Cluster) error {
		return tb.waitSynced(ctx, c.Name, tb.state.Git.Seeded, tb.wait(topology.WaitFluxReady))
	})
}

// CentralCredentialsNote says, for the log of `up` and the suite's summary, that the hub holds
// every cluster's credentials.
func CentralCredentialsNote(top *topology.Topology) string {
	names := top.ClusterNames()
	return fmt.Sprintf("the Argo CD hub beside %s holds the admin credentials of every cluster (%s) in its cluster Secrets: one process can write to the whole fleet, which Polykube's design otherwise avoids (delivery argocd, an Argo CD per cluster, keeps each cluster's credentials in that cluster)",
		top.ArgoCDHub(""), strings.Join(names, ", "))
}
