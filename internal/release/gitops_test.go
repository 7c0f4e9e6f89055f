package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	"github.com/polykube/polykube/internal/testenv"
)

// TestGitopsTarball_BuildsOnItsOwn unpacks the artifact's content where nothing else of the
// repository is, and builds ./gitops/operator from it as Flux's kustomize-controller would
// from an OCIRepository: it must be self-contained and run the release's image by digest.
func TestGitopsTarball_BuildsOnItsOwn(t *testing.T) {
	g := NewWithT(t)
	ref := "registry.example/polykube/operator@" + testDigest
	content, n, err := gitopsTarball(testenv.RepoRoot(), ref, time.Unix(0, 0))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(n).To(BeNumerically(">", 5))

	again, _, err := gitopsTarball(testenv.RepoRoot(), ref, time.Unix(0, 0))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(again).To(Equal(content), "the artifact must be reproducible")

	dir := t.TempDir()
	gz, err := gzip.NewReader(bytes.NewReader(content))
	g.Expect(err).NotTo(HaveOccurred())
	tr := tar.NewReader(gz)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(h.Name).NotTo(HaveSuffix(".go"))
		p := filepath.Join(dir, filepath.FromSlash(h.Name))
		g.Expect(os.MkdirAll(filepath.Dir(p), 0o755)).To(Succeed())
		data, err := io.ReadAll(tr)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(os.WriteFile(p, data, 0o644)).To(Succeed())
	}
	kust, err := os.ReadFile(filepath.Join(dir, "gitops", "operator", "kustomization.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(kust)).To(ContainSubstring("postBuild:"), "the comments saying how to use the base are kept")

	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(dir, "gitops", "operator"))
	g.Expect(err).NotTo(HaveOccurred())
	out, err := m.AsYaml()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("image: " + ref + "\n"))
	g.Expect(strings.Count(string(out), "kind: CustomResourceDefinition")).To(Equal(5))
}
