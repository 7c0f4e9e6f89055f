package datapath

import (
	"path"
	"path/filepath"
	"runtime"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

func repoRoot(t *testing.T) string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// buildIn runs kustomize on dir of the repository files.
func buildIn(t *testing.T, files map[string][]byte, dir string) map[string]string {
	t.Helper()
	fs := filesys.MakeFsInMemory()
	for name, data := range files {
		if err := fs.WriteFile("/"+name, data); err != nil {
			t.Fatal(err)
		}
	}
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/"+dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	images := map[string]string{}
	for _, r := range res.Resources() {
		if r.GetKind() != "Deployment" {
			continue
		}
		img, err := r.GetString("spec.template.spec.containers[0].image")
		if err != nil {
			t.Fatal(err)
		}
		images[r.GetName()] = img
	}
	return images
}

// Each cluster applies the operator through its own directory, which names the release it
// runs: a cluster moves to another release by a commit of that one file, and what it builds
// is that release's operator with that release's image.
func TestSeed_EachClusterNamesTheOperatorReleaseItRuns(t *testing.T) {
	g := NewWithT(t)
	top, err := topology.Load(filepath.Join(repoRoot(t), "scenarios", "topology-kind.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	const this = "172.18.0.1:5000/polykube/polykube@sha256:1111111111111111111111111111111111111111111111111111111111111111"
	seed, err := Seed(top, gitrepo.SourcesIn(repoRoot(t)), this)
	g.Expect(err).NotTo(HaveOccurred())
	for _, c := range top.Clusters {
		g.Expect(seed.Files).To(HaveKey(ClusterOperatorPath(c.Name) + "/kustomization.yaml"))
		g.Expect(buildIn(t, seed.Files, ClusterOperatorPath(c.Name))).To(HaveKeyWithValue(seed.Deployment.Name, this))
		_, kss := FluxObjects(top, c.Name, "http://git.invalid/gitops.git")
		g.Expect(kss[0].Name).To(Equal(gitrepo.OperatorKustomization))
		g.Expect(kss[0].Spec.Path).To(Equal("./" + ClusterOperatorPath(c.Name)))
	}

	// Another release beside it, and one cluster moved to it.
	const other = "172.18.0.1:5000/polykube/operator-previous@sha256:2222222222222222222222222222222222222222222222222222222222222222"
	rel, err := OperatorRelease(gitrepo.SourcesIn(repoRoot(t)).OperatorBase, other)
	g.Expect(err).NotTo(HaveOccurred())
	for name, data := range rel {
		seed.Files[path.Join("operator-previous", name)] = data
	}
	alpha := top.Clusters[0].Name
	seed.Files[ClusterOperatorPath(alpha)+"/kustomization.yaml"] = ClusterOperatorKustomization(alpha, "operator-previous")
	g.Expect(buildIn(t, seed.Files, ClusterOperatorPath(alpha))).To(HaveKeyWithValue(seed.Deployment.Name, other))
	g.Expect(buildIn(t, seed.Files, ClusterOperatorPath(top.Clusters[1].Name))).To(HaveKeyWithValue(seed.Deployment.Name, this))
}
