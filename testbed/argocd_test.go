package testbed

import (
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
	NewWithT(t).Expect(commitOf("main@sha1:abc")).To(Equal("abc"))
}
