package examplestest

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"text/template"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// TestArgoCD_ClusterNameReachesTheOperator renders the ApplicationSet template of
// examples/argocd for a cluster Secret the way the cluster generator does (goTemplate), then
// builds the operator manifests of gitops/operator with the Application's Kustomize patch, and
// checks that the operator starts with that cluster's --cluster-name and that the source path
// is a cluster directory of the repository layout of examples/aws-gcp.
func TestArgoCD_ClusterNameReachesTheOperator(t *testing.T) {
	g := NewWithT(t)
	docs, err := readDocs(filepath.Join(examplesDir(), "argocd", "applicationset.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs).To(HaveLen(1))
	appSet := docs[0].Obj

	secrets, err := readDocs(filepath.Join(examplesDir(), "argocd", "cluster-secrets.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(secrets).NotTo(BeEmpty())

	generators, _, err := unstructured.NestedSlice(appSet.Object, "spec", "generators")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(generators).To(HaveLen(1))
	matchLabels, _, err := unstructured.NestedStringMap(generators[0].(map[string]any), "clusters", "selector", "matchLabels")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(matchLabels).NotTo(BeEmpty(), "the generator selects the federation's clusters, not every cluster")

	render := func(t *testing.T, text string, params map[string]any) string {
		t.Helper()
		tmpl, err := template.New("appset").Option("missingkey=error").Parse(text)
		if err != nil {
			t.Fatalf("parse %q: %v", text, err)
		}
		var out bytes.Buffer
		if err := tmpl.Execute(&out, params); err != nil {
			t.Fatalf("render %q: %v", text, err)
		}
		return out.String()
	}

	for _, s := range secrets {
		labels := s.Obj.GetLabels()
		cluster := labels["polykube.kismet.io/cluster"]
		t.Run(cluster, func(t *testing.T) {
			g := NewWithT(t)
			for k, v := range matchLabels {
				g.Expect(labels).To(HaveKeyWithValue(k, v), "the generator selects %s", s)
			}
			labelsAny := map[string]any{}
			for k, v := range labels {
				labelsAny[k] = v
			}
			params := map[string]any{
				"name":     s.Obj.Object["stringData"].(map[string]any)["name"],
				"server":   s.Obj.Object["stringData"].(map[string]any)["server"],
				"metadata": map[string]any{"labels": labelsAny},
			}

			path, _, err := unstructured.NestedString(appSet.Object, "spec", "template", "spec", "source", "path")
			g.Expect(err).NotTo(HaveOccurred())
			renderedPath := render(t, path, params)
			g.Expect(renderedPath).To(Equal("clusters/" + cluster))
			g.Expect(filepath.Join(examplesDir(), "aws-gcp", "gitops", renderedPath, "kustomization.yaml")).To(BeAnExistingFile(),
				"the Application reads a cluster directory of the repository layout")

			patches, _, err := unstructured.NestedSlice(appSet.Object, "spec", "template", "spec", "source", "kustomize", "patches")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(patches).To(HaveLen(1))
			patch := patches[0].(map[string]any)
			patch["patch"] = render(t, patch["patch"].(string), params)

			// A kustomization like the one Argo CD builds: the operator base plus the patch.
			dir := t.TempDir()
			base, err := filepath.Rel(dir, filepath.Join(testenv.RepoRoot(), "gitops", "operator"))
			g.Expect(err).NotTo(HaveOccurred())
			kust, err := yaml.Marshal(map[string]any{
				"apiVersion": "kustomize.config.k8s.io/v1beta1",
				"kind":       "Kustomization",
				"resources":  []string{base},
				"patches":    []any{patch},
			})
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), kust, 0o644)).To(Succeed())
			resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
			g.Expect(err).NotTo(HaveOccurred(), "kustomize build of gitops/operator with the ApplicationSet's patch")
			out, err := resMap.AsYaml()
			g.Expect(err).NotTo(HaveOccurred())
			built, err := splitDocs("build", out)
			g.Expect(err).NotTo(HaveOccurred())

			var found bool
			for _, d := range built {
				if d.Obj.GetKind() != "Deployment" || d.Obj.GetName() != "polykube-operator" {
					continue
				}
				found = true
				var dep appsv1.Deployment
				g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(d.Obj.Object, &dep)).To(Succeed())
				args := dep.Spec.Template.Spec.Containers[0].Args
				var last string
				for _, a := range args {
					if strings.HasPrefix(a, "--cluster-name=") {
						last = a // the operator's flag parsing keeps the last occurrence
					}
				}
				g.Expect(last).To(Equal("--cluster-name="+cluster), "operator args %v", args)
			}
			g.Expect(found).To(BeTrue(), "gitops/operator has a Deployment named polykube-operator for the patch to target")
		})
	}
}

// TestArgoCD_TestBedObjectsAreAccepted dry-runs, strictly, what the test bed gives each Argo CD
// it runs (delivery argocd): its two Applications and the argocd-cm fragment with Polykube's
// health checks, shipped in gitops/argocd.
func TestArgoCD_TestBedObjectsAreAccepted(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	apps := testbed.Applications("http://127.0.0.1:8080/polykube.git", "alpha",
		gitrepo.OperatorObject{Kind: "Deployment", Namespace: "polykube-system", Name: "polykube-operator"})
	NewWithT(t).Expect(apps).To(HaveLen(2))
	docs := []doc{}
	for _, a := range apps {
		docs = append(docs, doc{Source: "testbed.Applications", Obj: a})
	}
	health, err := readDocs(filepath.Join(testenv.RepoRoot(), testbed.ArgoCDHealthChecks))
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	for _, d := range append(docs, health...) {
		if err := dryRun(ctx, d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}
