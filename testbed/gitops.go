package testbed

import (
	"fmt"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// The Flux objects the test bed creates in every cluster.
const (
	FluxNamespace = "flux-system"
	// FluxObjectName names the GitRepository and the Kustomization.
	FluxObjectName = "polykube"
)

// The Argo CD objects the test bed creates in every cluster (delivery argocd) or in the hub
// (delivery argocd-central): two Applications stand where Flux's two Kustomizations stand.
const (
	ArgoCDNamespace = "argocd"
	// ArgoCDOperatorApp applies the operator base; ArgoCDClusterApp the cluster's entry point.
	ArgoCDOperatorApp = "polykube-operator"
	ArgoCDClusterApp  = "polykube"
	// ArgoCDHealthChecks is the argocd-cm fragment, in the checkout, with the health checks
	// Polykube ships for its kinds; the test bed loads it into every Argo CD it runs.
	ArgoCDHealthChecks = "gitops/argocd/health-checks.yaml"
)

// ApplicationGVK is Argo CD's Application; the test bed handles it unstructured, so as not to
// link Argo CD (a module that needs a newer Go than Polykube's).
var ApplicationGVK = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}

// LoadArgoCDHealthChecks reads the data of the argocd-cm fragment that ships Polykube's health
// checks (resource.customizations.health.<group>_<kind>: a Lua script each).
func LoadArgoCDHealthChecks(path string) (map[string]string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read Polykube's Argo CD health checks: %w", err)
	}
	var cm corev1.ConfigMap
	if err := yaml.UnmarshalStrict(data, &cm); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if cm.Name != "argocd-cm" || len(cm.Data) == 0 {
		return nil, fmt.Errorf("%s: want the ConfigMap argocd-cm with health checks in its data, got %q with %d keys", path, cm.Name, len(cm.Data))
	}
	return cm.Data, nil
}

// Applications returns the cluster's two Applications: the operator base, with the cluster's
// name passed to the operator by a Kustomize patch of the source (Argo CD has no Flux
// post-build substitution: the patch appends --cluster-name, and the last flag wins, as in
// examples/argocd), and the cluster's entry point. Both sync automatically with prune and
// self-heal, server-side (the CRDs are large), retrying while the roster waits for the CRDs
// the other one brings.
func Applications(gitURL, cluster string, operator gitrepo.OperatorObject) []*unstructured.Unstructured {
	app := func(name, path string, kustomize map[string]any) *unstructured.Unstructured {
		source := map[string]any{"repoURL": gitURL, "targetRevision": gitrepo.Branch, "path": path}
		if kustomize != nil {
			source["kustomize"] = kustomize
		}
		return &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "argoproj.io/v1alpha1", "kind": "Application",
			"metadata": map[string]any{"name": name, "namespace": ArgoCDNamespace},
			"spec": map[string]any{
				"project":     "default",
				"source":      source,
				"destination": map[string]any{"name": cluster},
				"syncPolicy": map[string]any{
					"automated":   map[string]any{"prune": true, "selfHeal": true},
					"syncOptions": []any{"ServerSideApply=true"},
					"retry": map[string]any{"limit": int64(20),
						"backoff": map[string]any{"duration": "2s", "factor": int64(2), "maxDuration": "10s"}},
				},
			},
		}}
	}
	var apps []*unstructured.Unstructured
	if operator.Name != "" {
		apps = append(apps, app(ArgoCDOperatorApp, gitrepo.OperatorDir, map[string]any{
			"patches": []any{map[string]any{
				"target": map[string]any{"group": "apps", "version": "v1", "kind": "Deployment", "name": operator.Name, "namespace": operator.Namespace},
				"patch":  "- op: add\n  path: /spec/template/spec/containers/0/args/-\n  value: --cluster-name=" + cluster + "\n",
			}},
		}))
	}
	return append(apps, app(ArgoCDClusterApp, gitrepo.ClusterPath(cluster), nil))
}

// ArgoCDCommit turns a revision as the test bed reports it (Flux's main@sha1:<hash>) into the
// commit Argo CD reports.
func ArgoCDCommit(revision string) string {
	if _, h, ok := strings.Cut(revision, ":"); ok {
		return h
	}
	return revision
}

// AppSynced says why an Application has not (yet) synced the commit: nil once it is Synced at
// that commit and its last sync, if it ran one, succeeded. An Application that finds Git's
// objects already in place (one the ApplicationSet generated again, or a commit that changes
// nothing of its cluster) compares Synced and runs no sync of that commit: it is applied.
func AppSynced(app *unstructured.Unstructured, commit string) error {
	syncStatus, _, _ := unstructured.NestedString(app.Object, "status", "sync", "status")
	rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
	phase, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "phase")
	opRev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision")
	msg, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "message")
	switch {
	case rev != commit:
		return fmt.Errorf("Application %s compared %q, not yet %s (sync %s; last operation %s: %s)", app.GetName(), rev, commit, or(syncStatus, "unknown"), or(phase, "none"), msg)
	case syncStatus != "Synced":
		return fmt.Errorf("Application %s is %s at %s (last operation %s: %s)", app.GetName(), or(syncStatus, "not compared"), commit, or(phase, "none"), msg)
	case phase == "" && opRev == "":
	case opRev != commit && phase == "Succeeded":
	case opRev != commit || phase != "Succeeded":
		return fmt.Errorf("Application %s: the sync of %s has not succeeded (last operation at %q %s: %s)", app.GetName(), commit, opRev, or(phase, "none"), msg)
	}
	return nil
}

func or(s, dflt string) string {
	if s == "" {
		return dflt
	}
	return s
}

// ArgoCDClusterApplication names the Application that delivers the cluster's entry point
// (clusters/<name>), and the cluster whose API server holds it, under the topology's Argo CD
// delivery.
func ArgoCDClusterApplication(top *topology.Topology, cluster string) (hub, name string) {
	if top.Delivery == topology.DeliveryArgoCDCentral {
		return top.ArgoCDHub(cluster), CentralApplicationName(cluster)
	}
	return cluster, ArgoCDClusterApp
}

// The ApplicationSet of delivery argocd-central and how it names its clusters.
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

// CentralCredentialsNote says, for the log of `up` and the suite's summary, that the hub holds
// every cluster's credentials.
func CentralCredentialsNote(top *topology.Topology) string {
	names := top.ClusterNames()
	return fmt.Sprintf("the Argo CD hub beside %s holds the admin credentials of every cluster (%s) in its cluster Secrets: one process can write to the whole fleet, which Polykube's design otherwise avoids (delivery argocd, an Argo CD per cluster, keeps each cluster's credentials in that cluster)",
		top.ArgoCDHub(""), strings.Join(names, ", "))
}
