package gitrepo

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/storage/memory"
	"github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/topology"
)

func testSources() Sources {
	return Sources{OperatorBase: "testdata/operator", CRDs: "../../operator/config/crd/bases"}
}

func TestRender_LaysOutTheRepository(t *testing.T) {
	g := gomega.NewWithT(t)
	seed, err := Render(topology.Default(), testSources())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(seed.Deployment).To(gomega.Equal(OperatorObject{"Deployment", "polykube-system", "polykube-operator"}))
	g.Expect(seed.ServiceAccount).To(gomega.Equal(OperatorObject{"ServiceAccount", "polykube-system", "polykube-operator"}))
	g.Expect(seed.Files).To(gomega.HaveKey("crds/polykube.kismet.io_workloads.yaml"))
	g.Expect(seed.Files).To(gomega.HaveKey("operator/operator.yaml"))
	// The operator has a Kustomization of its own, as users deliver it; the cluster's entry
	// point is the roster and the workloads.
	g.Expect(string(seed.Files["operator/kustomization.yaml"])).To(gomega.And(
		gomega.ContainSubstring("- operator.yaml"), gomega.ContainSubstring("value: 0")))
	for _, c := range []string{"aws-eu-central-1", "gcp-europe-west3", "onprem-fra"} {
		k := string(seed.Files["clusters/"+c+"/kustomization.yaml"])
		g.Expect(k).To(gomega.ContainSubstring("- ../../workloads"))
		g.Expect(k).To(gomega.ContainSubstring("- ../../crds"))
		g.Expect(k).NotTo(gomega.ContainSubstring("operator"))
	}
	roster := string(seed.Files["roster/roster.yaml"])
	g.Expect(strings.Count(roster, "kind: ClusterMember")).To(gomega.Equal(3))
	g.Expect(roster).To(gomega.ContainSubstring("kind: Federation"))
	g.Expect(roster).To(gomega.ContainSubstring("clusterID: 2"))
	g.Expect(roster).NotTo(gomega.ContainSubstring("status"))
}

func TestRender_NeedsTheOperatorBase(t *testing.T) {
	g := gomega.NewWithT(t)
	_, err := Render(topology.Default(), Sources{OperatorBase: t.TempDir()})
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("needs gitops/operator")))
}

func TestServeAndCommit(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	root := t.TempDir()
	p, err := ports.Free(1)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	addr := fmt.Sprintf("127.0.0.1:%d", p[0])
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, root, addr) }()
	g.Eventually(func() error {
		resp, err := http.Get("http://" + addr + "/healthz")
		if err == nil {
			resp.Body.Close()
		}
		return err
	}).WithTimeout(10 * time.Second).Should(gomega.Succeed())

	seed, err := Render(topology.Default(), testSources())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	rev1, err := Commit(ctx, URL(addr), Change{Put: seed.Files, Message: "testbed: seed"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(rev1).To(gomega.HavePrefix("main@sha1:"))
	g.Expect(Head(ctx, URL(addr))).To(gomega.Equal(rev1))

	same, err := Commit(ctx, URL(addr), Change{Put: seed.Files})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(same).To(gomega.Equal(rev1), "a commit without changes keeps the revision")

	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "cm.yaml"), []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x, namespace: default}\n"), 0o644)).To(gomega.Succeed())
	files, err := WorkloadFiles(dir, "demo")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	rev2, err := Commit(ctx, URL(addr), Change{Put: files, Message: "add demo"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(rev2).NotTo(gomega.Equal(rev1))

	// A fresh clone (as Flux would make) sees the workload listed in workloads/.
	fs := memory.NewStorage()
	repo, err := git.CloneContext(ctx, fs, nil, &git.CloneOptions{URL: URL(addr)})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	head, _ := repo.Head()
	commit, _ := repo.CommitObject(head.Hash())
	f, err := commit.File("workloads/kustomization.yaml")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(f.Contents()).To(gomega.ContainSubstring("- demo"))
	f, err = commit.File("workloads/demo/kustomization.yaml")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(f.Contents()).To(gomega.ContainSubstring("- cm.yaml"))

	cancel()
	g.Eventually(done).WithTimeout(10 * time.Second).Should(gomega.Receive(gomega.BeNil()))
}

func TestRender_TheRepositorysOperatorBase(t *testing.T) {
	g := gomega.NewWithT(t)
	seed, err := Render(topology.Default(), SourcesIn("../.."))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(seed.Deployment).To(gomega.Equal(OperatorObject{"Deployment", "polykube-system", "polykube-operator"}))
	g.Expect(seed.ServiceAccount.Name).NotTo(gomega.BeEmpty())
	g.Expect(seed.Files).NotTo(gomega.HaveKey("crds/kustomization.yaml"), "gitops/operator carries the CRDs")
	g.Expect(string(seed.Files["operator/operator.yaml"])).To(gomega.ContainSubstring("kind: CustomResourceDefinition"))
	g.Expect(string(seed.Files["operator/operator.yaml"])).To(gomega.ContainSubstring("--cluster-name=${CLUSTER_NAME}"))
}

// A run without the git add-on has no address; its URL is empty, not "http:///…", so that
// up prints no repository and nothing is cloned from a URL without a host.
func TestURL(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(URL("127.0.0.1:8090")).To(gomega.Equal("http://127.0.0.1:8090/" + RepoPath))
	g.Expect(URL("")).To(gomega.BeEmpty())
}
