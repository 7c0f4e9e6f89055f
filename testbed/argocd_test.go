package testbed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// TestApplications_ClusterNameReachesTheOperator builds the served operator/ directory with the
// Kustomize patches of the operator's Application added to its kustomization.yaml, as Argo CD's
// repo-server does, and checks that the operator's last --cluster-name is the cluster's: the
// Argo CD stand-in for Flux's ${CLUSTER_NAME} substitution.
func TestApplications_ClusterNameReachesTheOperator(t *testing.T) {
	g := NewWithT(t)
	top := topology.Default()
	seed, err := gitrepo.Render(top, gitrepo.SourcesIn(testenv.RepoRoot()))
	g.Expect(err).NotTo(HaveOccurred())
	cluster := top.Clusters[1].Name
	apps := Applications("http://127.0.0.1:1/polykube.git", cluster, seed.Deployment)
	g.Expect(apps).To(HaveLen(2))
	g.Expect(apps[1].GetName()).To(Equal(ArgoCDClusterApp))
	path, _, _ := unstructured.NestedString(apps[1].Object, "spec", "source", "path")
	g.Expect(path).To(Equal(gitrepo.ClusterPath(cluster)))

	patches, _, err := unstructured.NestedSlice(apps[0].Object, "spec", "source", "kustomize", "patches")
	g.Expect(err).NotTo(HaveOccurred())
	fs := filesys.MakeFsInMemory()
	for name, data := range seed.Files {
		g.Expect(fs.WriteFile(filepath.Join("/repo", name), data)).To(Succeed())
	}
	kfile := "/repo/" + gitrepo.OperatorDir + "/kustomization.yaml"
	raw, err := fs.ReadFile(kfile)
	g.Expect(err).NotTo(HaveOccurred())
	k := map[string]any{}
	g.Expect(yaml.Unmarshal(raw, &k)).To(Succeed())
	k["patches"] = append(k["patches"].([]any), patches...)
	raw, err = yaml.Marshal(k)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(fs.WriteFile(kfile, raw)).To(Succeed())

	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/repo/"+gitrepo.OperatorDir)
	g.Expect(err).NotTo(HaveOccurred())
	var found bool
	for _, r := range res.Resources() {
		if r.GetKind() != "Deployment" || r.GetName() != seed.Deployment.Name {
			continue
		}
		m, err := r.Map()
		g.Expect(err).NotTo(HaveOccurred())
		d := &appsv1.Deployment{}
		g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(m, d)).To(Succeed())
		var last string
		for _, a := range d.Spec.Template.Spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(a, "--cluster-name="); ok {
				last = v
			}
		}
		g.Expect(last).To(Equal(cluster), "the last --cluster-name wins in Go's flag parsing")
		g.Expect(*d.Spec.Replicas).To(BeZero(), "the test bed's own patch stays")
		found = true
	}
	g.Expect(found).To(BeTrue(), "the operator's Deployment is in operator/")
}

func TestAppSynced(t *testing.T) {
	app := func(sync, rev, phase, opRev string) *unstructured.Unstructured {
		u := &unstructured.Unstructured{Object: map[string]any{"metadata": map[string]any{"name": "polykube"}, "status": map[string]any{
			"sync":           map[string]any{"status": sync, "revision": rev},
			"operationState": map[string]any{"phase": phase, "message": "m", "syncResult": map[string]any{"revision": opRev}},
		}}}
		return u
	}
	tests := []struct {
		name string
		app  *unstructured.Unstructured
		want string
	}{
		{"synced", app("Synced", "abc", "Succeeded", "abc"), ""},
		{"older commit", app("Synced", "old", "Succeeded", "old"), `compared "old", not yet abc`},
		{"out of sync", app("OutOfSync", "abc", "Running", "old"), "is OutOfSync at abc"},
		{"sync failed", app("Synced", "abc", "Failed", "abc"), "has not succeeded"},
		{"no status", &unstructured.Unstructured{Object: map[string]any{}}, `compared "", not yet abc`},
		// An Application that finds Git's objects already in place (generated again by the
		// ApplicationSet, or a commit that changes nothing of its cluster) compares Synced and
		// runs no sync: the commit is applied.
		{"in place, never synced", app("Synced", "abc", "", ""), ""},
		{"in place, last sync older", app("Synced", "abc", "Succeeded", "old"), ""},
		{"sync running", app("Synced", "abc", "Running", "abc"), "has not succeeded"},
		{"older sync failed", app("Synced", "abc", "Failed", "old"), "has not succeeded"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := AppSynced(tt.app, "abc")
			if tt.want == "" {
				NewWithT(t).Expect(err).NotTo(HaveOccurred())
				return
			}
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
	NewWithT(t).Expect(ArgoCDCommit("main@sha1:abc")).To(Equal("abc"))
}

// TestExampleApplicationSet_DeliversTheOperatorWithItsClusterName builds, for each cluster of a
// topology with delivery argocd-central, the Application the example's ApplicationSet generates
// (its template, with the cluster label the test bed puts on the cluster Secret), as Argo CD's
// repo-server does: the cluster's entry point with the template's Kustomize patches. The
// result must hold the operator, its last --cluster-name the cluster's, the roster and the CRDs:
// the example itself, not a copy, is what delivers on this layout.
func TestExampleApplicationSet_DeliversTheOperatorWithItsClusterName(t *testing.T) {
	g := NewWithT(t)
	top := topology.Default()
	top.Delivery = topology.DeliveryArgoCDCentral
	top.Addons = nil
	top.SetDefaults()
	g.Expect(top.Validate()).To(Succeed())
	seed, err := gitrepo.Render(top, gitrepo.SourcesIn(testenv.RepoRoot()))
	g.Expect(err).NotTo(HaveOccurred())
	set, err := LoadApplicationSet(filepath.Join(testenv.RepoRoot(), ExampleApplicationSet), "http://127.0.0.1:1/polykube.git", gitrepo.Branch)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(set.Selector).To(HaveKeyWithValue("polykube.kismet.io/federation", "production"))
	repo, _, _ := unstructured.NestedString(set.Object.Object, "spec", "template", "spec", "source", "repoURL")
	g.Expect(repo).To(Equal("http://127.0.0.1:1/polykube.git"))
	preserve, _, _ := unstructured.NestedBool(set.Object.Object, "spec", "syncPolicy", "preserveResourcesOnDeletion")
	g.Expect(preserve).To(BeTrue(), "the example keeps what its Applications delivered when they go")

	for _, c := range top.Clusters {
		// The template, rendered for this cluster as the goTemplate would render it.
		raw, err := yaml.Marshal(set.Object.Object["spec"].(map[string]any)["template"])
		g.Expect(err).NotTo(HaveOccurred())
		rendered := strings.ReplaceAll(string(raw), clusterLabelExpr, c.Name)
		rendered = strings.ReplaceAll(rendered, "{{ .server }}", "https://"+c.Name+".example")
		g.Expect(rendered).NotTo(ContainSubstring("{{"), "the template reads only the cluster label and server")
		tmpl := map[string]any{}
		g.Expect(yaml.Unmarshal([]byte(rendered), &tmpl)).To(Succeed())
		name, _, _ := unstructured.NestedString(tmpl, "metadata", "name")
		g.Expect(name).To(Equal(CentralApplicationName(c.Name)))
		path, _, _ := unstructured.NestedString(tmpl, "spec", "source", "path")
		g.Expect(path).To(Equal(gitrepo.ClusterPath(c.Name)))
		patches, _, err := unstructured.NestedSlice(tmpl, "spec", "source", "kustomize", "patches")
		g.Expect(err).NotTo(HaveOccurred())

		fs := filesys.MakeFsInMemory()
		for file, data := range seed.Files {
			g.Expect(fs.WriteFile(filepath.Join("/repo", file), data)).To(Succeed())
		}
		kfile := "/repo/" + path + "/kustomization.yaml"
		kraw, err := fs.ReadFile(kfile)
		g.Expect(err).NotTo(HaveOccurred())
		k := map[string]any{}
		g.Expect(yaml.Unmarshal(kraw, &k)).To(Succeed())
		k["patches"] = patches
		kraw, err = yaml.Marshal(k)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(fs.WriteFile(kfile, kraw)).To(Succeed())

		res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/repo/"+path)
		g.Expect(err).NotTo(HaveOccurred())
		kinds := map[string]int{}
		var last string
		for _, r := range res.Resources() {
			kinds[r.GetKind()]++
			if r.GetKind() != "Deployment" || r.GetName() != seed.Deployment.Name {
				continue
			}
			m, err := r.Map()
			g.Expect(err).NotTo(HaveOccurred())
			d := &appsv1.Deployment{}
			g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructured(m, d)).To(Succeed())
			for _, a := range d.Spec.Template.Spec.Containers[0].Args {
				if v, ok := strings.CutPrefix(a, "--cluster-name="); ok {
					last = v
				}
			}
			g.Expect(*d.Spec.Replicas).To(BeZero(), "the test bed's own patch stays")
		}
		g.Expect(last).To(Equal(c.Name), "cluster %s: the last --cluster-name wins in Go's flag parsing", c.Name)
		g.Expect(kinds).To(HaveKeyWithValue("ClusterMember", len(top.Clusters)))
		g.Expect(kinds).To(HaveKey("CustomResourceDefinition"))
	}
}

func TestLoadApplicationSet_RefusesAnotherShape(t *testing.T) {
	dir := t.TempDir()
	for name, body := range map[string]string{
		"not an ApplicationSet": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: polykube, namespace: argocd}\n",
		"list generator":        "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: polykube, namespace: argocd}\nspec:\n  generators: [{list: {elements: []}}]\n",
		"other app name":        "apiVersion: argoproj.io/v1alpha1\nkind: ApplicationSet\nmetadata: {name: polykube, namespace: argocd}\nspec:\n  generators: [{clusters: {selector: {matchLabels: {a: b}}}}]\n  template: {metadata: {name: '{{ .name }}'}, spec: {source: {repoURL: x, targetRevision: HEAD}}}\n",
	} {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if _, err := LoadApplicationSet(p, "http://git", "main"); err == nil {
			t.Errorf("%s: LoadApplicationSet accepted it", name)
		}
	}
}
