package gitrepo

import (
	"testing"

	"github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/polykube/polykube/testbed/topology"
)

// A patched roster kustomization builds, with kustomize as Flux runs it, to the roster with
// only the patched member's labels changed; the seed's has no patch.
func TestRosterKustomization_PatchesOneMembersLabels(t *testing.T) {
	g := gomega.NewWithT(t)
	top := topology.Default()
	top.Clusters[2].Labels = map[string]string{"geo": "us", "site": "onprem"}
	roster, err := RenderRoster(top)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(string(RosterKustomization(nil))).NotTo(gomega.ContainSubstring("patches"))

	build := func(kustomization []byte) map[string]map[string]any {
		fs := filesys.MakeFsInMemory()
		g.Expect(fs.WriteFile("/roster/roster.yaml", roster)).To(gomega.Succeed())
		g.Expect(fs.WriteFile("/roster/kustomization.yaml", kustomization)).To(gomega.Succeed())
		res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, "/roster")
		g.Expect(err).NotTo(gomega.HaveOccurred(), string(kustomization))
		labels := map[string]map[string]any{}
		for _, r := range res.Resources() {
			if r.GetKind() != "ClusterMember" {
				continue
			}
			m, err := r.Map()
			g.Expect(err).NotTo(gomega.HaveOccurred())
			l, _ := m["spec"].(map[string]any)["labels"].(map[string]any)
			labels[r.GetName()] = l
		}
		return labels
	}
	name := top.Clusters[2].Name
	plain := build(RosterKustomization(nil))
	patched := build(RosterKustomization([]Patch{{Kind: "ClusterMember", Name: name,
		Patch: "apiVersion: polykube.kismet.io/v1alpha1\nkind: ClusterMember\nmetadata:\n  name: " + name + "\nspec:\n  labels:\n    geo: eu\n"}}))
	g.Expect(plain[name]).To(gomega.Equal(map[string]any{"geo": "us", "site": "onprem"}))
	g.Expect(patched[name]).To(gomega.Equal(map[string]any{"geo": "eu", "site": "onprem"}))
	for _, c := range top.Clusters[:2] {
		g.Expect(patched[c.Name]).To(gomega.Equal(plain[c.Name]), "only the patched member changes")
	}
}
