package gitrepo

import (
	"bytes"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/topology"
)

// The directories of the served repository.
const (
	OperatorDir  = "operator"
	CRDsDir      = "crds"
	RosterDir    = "roster"
	ClustersDir  = "clusters"
	WorkloadsDir = "workloads"
)

// ClusterPath is the entry point Flux applies in the named cluster.
func ClusterPath(name string) string { return ClustersDir + "/" + name }

// ClusterNameVar is the variable Flux substitutes with the cluster's name (postBuild).
const ClusterNameVar = "CLUSTER_NAME"

// OperatorKustomization names the Flux Kustomization that applies OperatorDir in every
// cluster, as users deliver the operator (examples/aws-gcp/gitops/flux, infra/tofu): apart
// from the cluster's entry point, which depends on it.
const OperatorKustomization = "polykube-operator"

// Sources are the directories of the Polykube checkout the repository is made from.
type Sources struct {
	// OperatorBase is the kustomization of the operator (gitops/operator); "" leaves the
	// operator out (a federation without the operator add-on).
	OperatorBase string
	// CRDs holds the generated CRDs (operator/config/crd/bases).
	CRDs string
}

// SourcesIn returns the standard sources of a checkout at root.
func SourcesIn(root string) Sources {
	return Sources{
		OperatorBase: filepath.Join(root, "gitops", "operator"),
		CRDs:         filepath.Join(root, "operator", "config", "crd", "bases"),
	}
}

// OperatorObject names an object of the rendered operator base.
type OperatorObject struct{ Kind, Namespace, Name string }

// Seed is the initial content of the served repository.
type Seed struct {
	Files map[string][]byte
	// Deployment and ServiceAccount are the operator's, found in the rendered base.
	Deployment, ServiceAccount OperatorObject
}

// Render builds the initial repository for a topology:
//
//	operator/                the operator base rendered from gitops/operator (kustomize),
//	                         applied by its own Kustomization (OperatorKustomization), with
//	                         the Deployment scaled to 0 (kwok would only fake its pods; the
//	                         test bed runs the operator as a process instead)
//	crds/                    the Polykube CRDs, when the base does not carry them
//	roster/                  a ClusterMember per cluster and the Federation
//	clusters/<name>/         each cluster's entry point: CRDs (if in crds/), roster, workloads
//	workloads/               one directory per committed set of manifests
func Render(top *topology.Topology, src Sources) (*Seed, error) {
	s := &Seed{Files: map[string][]byte{}}
	var resources []string
	var haveCRDs bool
	if src.OperatorBase != "" {
		op, err := RenderOperator(src.OperatorBase)
		if err != nil {
			return nil, err
		}
		haveCRDs, s.Deployment, s.ServiceAccount = op.CRDs, op.Deployment, op.ServiceAccount
		s.Files[OperatorDir+"/operator.yaml"] = op.YAML
		patch := fmt.Sprintf(`patches:
  # kwok only fakes pods: the test bed runs the operator as a process beside the cluster.
  - target:
      kind: Deployment
      name: %s
      namespace: %s
    patch: |
      - op: replace
        path: /spec/replicas
        value: 0
`, s.Deployment.Name, s.Deployment.Namespace)
		s.Files[OperatorDir+"/kustomization.yaml"] = kustomization([]string{"operator.yaml"},
			"# Applied by the Kustomization "+OperatorKustomization+"; Flux substitutes ${"+ClusterNameVar+"} with the cluster's name.\n"+patch)
	}
	if !haveCRDs {
		files, err := filepath.Glob(filepath.Join(src.CRDs, "*.yaml"))
		if err != nil || len(files) == 0 {
			return nil, fmt.Errorf("no Polykube CRDs in the operator base nor in %s: run `make generate`", src.CRDs)
		}
		var names []string
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			s.Files[CRDsDir+"/"+filepath.Base(f)] = data
			names = append(names, filepath.Base(f))
		}
		s.Files[CRDsDir+"/kustomization.yaml"] = kustomization(names, "")
		resources = append(resources, "../../"+CRDsDir)
	}

	roster, err := RenderRoster(top)
	if err != nil {
		return nil, err
	}
	s.Files[RosterDir+"/roster.yaml"] = roster
	s.Files[RosterDir+"/kustomization.yaml"] = RosterKustomization(nil)
	s.Files[WorkloadsDir+"/kustomization.yaml"] = kustomization(nil, "")
	resources = append(resources, "../../"+RosterDir, "../../"+WorkloadsDir)
	header := "# The entry point of cluster %s; Flux substitutes ${" + ClusterNameVar + "} with the cluster's name.\n"
	if top.Delivery == topology.DeliveryArgoCDCentral && src.OperatorBase != "" {
		// The ApplicationSet of examples/argocd generates one Application per cluster, for
		// clusters/<name>, and passes the cluster's name by a Kustomize patch of the operator's
		// Deployment: the operator is vendored into each entry point, as that example says.
		resources = append([]string{"../../" + OperatorDir}, resources...)
		header = "# The entry point of cluster %s, operator included: Argo CD's ApplicationSet (examples/argocd) delivers it and patches --cluster-name in.\n"
	}

	for _, c := range top.Clusters {
		s.Files[ClusterPath(c.Name)+"/kustomization.yaml"] = kustomization(resources, fmt.Sprintf(header, c.Name))
	}
	s.Files["README.md"] = []byte("# Polykube test-bed GitOps repository\n\nServed by `polykube-testbed`. Flux in each cluster applies `operator/` (Kustomization " + OperatorKustomization + ") and `clusters/<name>/`.\n`polykube-testbed git commit DIR` adds manifests under `workloads/`.\n")
	return s, nil
}

// Operator is an operator base rendered by kustomize.
type Operator struct {
	// YAML is every object, as one multi-document file.
	YAML []byte
	// CRDs says whether the base carries the Polykube CRDs.
	CRDs bool
	// Deployment and ServiceAccount are the operator's.
	Deployment, ServiceAccount OperatorObject
}

// RenderOperator renders the operator base in dir (gitops/operator of a checkout, this one's
// or another release's) and finds the operator's Deployment and ServiceAccount in it.
func RenderOperator(dir string) (*Operator, error) {
	objs, err := renderOperator(dir)
	if err != nil {
		return nil, err
	}
	op := &Operator{}
	var all [][]byte
	for _, o := range objs {
		switch {
		case o.Kind == "CustomResourceDefinition" && strings.HasSuffix(o.Name, "."+polykubev1alpha1.GroupVersion.Group):
			op.CRDs = true
		case o.Kind == "Deployment" && op.Deployment.Name == "":
			op.Deployment = o.OperatorObject
		case o.Kind == "ServiceAccount" && op.ServiceAccount.Name == "":
			op.ServiceAccount = o.OperatorObject
		}
		all = append(all, o.YAML)
	}
	if op.Deployment.Name == "" || op.ServiceAccount.Name == "" {
		return nil, fmt.Errorf("the operator base %s has no Deployment or no ServiceAccount; the test bed needs both (it runs the operator with a token of that ServiceAccount)", dir)
	}
	op.YAML = bytes.Join(all, []byte("---\n"))
	return op, nil
}

type renderedObject struct {
	OperatorObject
	YAML []byte
}

// renderOperator runs kustomize on the operator base, so references outside that directory
// (for example to operator/config) are resolved in the checkout, not in the served repository.
func renderOperator(dir string) ([]renderedObject, error) {
	if _, err := os.Stat(filepath.Join(dir, "kustomization.yaml")); err != nil {
		return nil, fmt.Errorf("the operator base %s has no kustomization.yaml: the operator add-on needs gitops/operator (or remove `operator` from the topology's addons)", dir)
	}
	k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
	res, err := k.Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return nil, fmt.Errorf("kustomize build %s: %w", dir, err)
	}
	var out []renderedObject
	for _, r := range res.Resources() {
		data, err := r.AsYAML()
		if err != nil {
			return nil, err
		}
		out = append(out, renderedObject{OperatorObject{r.GetKind(), r.GetNamespace(), r.GetName()}, data})
	}
	return out, nil
}

// RenderRoster renders a ClusterMember per cluster and the Federation of the topology.
func RenderRoster(top *topology.Topology) ([]byte, error) {
	var docs [][]byte
	gv := polykubev1alpha1.GroupVersion.String()
	for _, c := range top.Clusters {
		m := polykubev1alpha1.ClusterMember{
			TypeMeta:   metav1.TypeMeta{APIVersion: gv, Kind: "ClusterMember"},
			ObjectMeta: metav1.ObjectMeta{Name: c.Name},
			Spec: polykubev1alpha1.ClusterMemberSpec{
				Provider: c.Provider, Region: c.Region, Zone: c.Zone, Labels: c.Labels,
				Mesh: polykubev1alpha1.ClusterMeshSettings{ClusterID: c.ClusterID, PodCIDRs: c.PodCIDRs, ServiceCIDR: c.ServiceCIDR},
			},
		}
		data, err := Manifest(m)
		if err != nil {
			return nil, err
		}
		docs = append(docs, data)
	}
	f := polykubev1alpha1.Federation{
		TypeMeta:   metav1.TypeMeta{APIVersion: gv, Kind: "Federation"},
		ObjectMeta: metav1.ObjectMeta{Name: top.Name},
		Spec:       polykubev1alpha1.FederationSpec{Members: top.ClusterNames()},
	}
	data, err := Manifest(f)
	if err != nil {
		return nil, err
	}
	docs = append(docs, data)
	return bytes.Join(docs, []byte("---\n")), nil
}

// Manifest encodes an object as a user writes it to Git: without status and without the
// null creationTimestamp a Go object marshals (also in a pod template), which are the API
// server's to set.
func Manifest(obj any) ([]byte, error) {
	data, err := yaml.Marshal(obj)
	if err != nil {
		return nil, err
	}
	var m map[string]any
	if err := yaml.Unmarshal(data, &m); err != nil {
		return nil, err
	}
	delete(m, "status")
	if md, ok := m["metadata"].(map[string]any); ok {
		delete(md, "creationTimestamp")
	}
	if spec, ok := m["spec"].(map[string]any); ok {
		if tpl, ok := spec["template"].(map[string]any); ok {
			if md, ok := tpl["metadata"].(map[string]any); ok {
				delete(md, "creationTimestamp")
			}
		}
	}
	return yaml.Marshal(m)
}

// Patch is a kustomize patch of one object: a strategic-merge (for custom resources, a JSON
// merge) patch document.
type Patch struct {
	Kind, Name string
	Patch      string
}

// RosterKustomization is the roster's kustomization.yaml: roster.yaml, and the patches given.
// The test bed serves it without patches; a scenario that changes a ClusterMember's labels
// through Git commits it with one, and the seed's again when it ends.
func RosterKustomization(patches []Patch) []byte {
	var extra strings.Builder
	if len(patches) > 0 {
		extra.WriteString("patches:\n")
		for _, p := range patches {
			fmt.Fprintf(&extra, "  - target:\n      kind: %s\n      name: %s\n    patch: |\n", p.Kind, p.Name)
			for _, line := range strings.Split(strings.TrimRight(p.Patch, "\n"), "\n") {
				extra.WriteString("      " + line + "\n")
			}
		}
	}
	return kustomization([]string{"roster.yaml"}, extra.String())
}

// kustomization writes a kustomization.yaml with the resources and extra text.
func kustomization(resources []string, extra string) []byte {
	var b strings.Builder
	b.WriteString("apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n")
	if len(resources) == 0 {
		b.WriteString("resources: []\n")
	} else {
		b.WriteString("resources:\n")
		for _, r := range slices.Sorted(slices.Values(resources)) {
			b.WriteString("  - " + r + "\n")
		}
	}
	b.WriteString(extra)
	return []byte(b.String())
}

// WorkloadFiles maps the YAML files of a local directory to paths under workloads/<name>/.
func WorkloadFiles(dir, name string) (map[string][]byte, error) {
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		if ext := filepath.Ext(p); ext != ".yaml" && ext != ".yml" {
			return nil
		}
		rel, err := filepath.Rel(dir, p)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		files[path.Join(WorkloadsDir, name, filepath.ToSlash(rel))] = data
		return nil
	})
	if err == nil && len(files) == 0 {
		err = fmt.Errorf("%s holds no .yaml files to commit", dir)
	}
	return files, err
}
