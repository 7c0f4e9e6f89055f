package release

import (
	"bufio"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	. "github.com/onsi/gomega"
	spdxjson "github.com/spdx/tools-golang/json"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"

	"github.com/polykube/polykube/internal/testenv"
)

func TestValidateVersion(t *testing.T) {
	for _, v := range []string{"v0.1.0", "v1.20.3", "v0.2.0-rc.1", "v1.0.0-alpha.1+build.5", "v10.0.0+20261207"} {
		if err := ValidateVersion(v); err != nil {
			t.Errorf("ValidateVersion(%q) = %v, want nil", v, err)
		}
	}
	for _, v := range []string{"", "0.1.0", "v0.1", "v01.2.3", "v1.2.3-", "v1.2.3-01", "latest", "v1.2.3 ", "v1.2.3/x"} {
		if err := ValidateVersion(v); err == nil {
			t.Errorf("ValidateVersion(%q) = nil, want an error", v)
		}
	}
	NewWithT(t).Expect(ValidateVersion("0.1.0")).To(MatchError(ContainSubstring("not a semver tag: write vMAJOR.MINOR.PATCH")))
}

func TestBuild_RefusesADirectoryItDidNotWrite(t *testing.T) {
	g := NewWithT(t)
	dist := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dist, "notes.txt"), []byte("mine"), 0o644)).To(Succeed())
	_, err := Build(context.Background(), Options{Version: "v0.1.0", Dist: dist, RepoRoot: testenv.RepoRoot()})
	g.Expect(err).To(MatchError(ContainSubstring("was not written by make release")))
	g.Expect(filepath.Join(dist, "notes.txt")).To(BeAnExistingFile())
}

// TestBuild builds a release for this machine's architecture (every image platform with
// POLYKUBE_RELEASE_ALL_PLATFORMS=1: the cross builds take minutes on a cold cache) and checks
// what a user relies on: the index holds the platforms, the image runs as non-root, install.yaml
// pins the index digest, SHA256SUMS verifies, the SBOM lists the binary's modules and the CLI
// reports the stamped version.
func TestBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds binaries: not in -short")
	}
	g := NewWithT(t)
	platforms := []Platform{{"linux", runtime.GOARCH}}
	if os.Getenv("POLYKUBE_RELEASE_ALL_PLATFORMS") != "" {
		platforms = ImagePlatforms
	}
	host := Platform{runtime.GOOS, runtime.GOARCH}
	dist := filepath.Join(t.TempDir(), "dist")
	// A registry on loopback, for make publish at the end.
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	repository := strings.TrimPrefix(srv.URL, "http://") + "/polykube/operator"
	var progress strings.Builder
	// Signed with a cosign key, as make release SIGN_KEY=… does.
	signKey, trusted := testKey(t, t.TempDir(), "pw")
	res, err := Build(context.Background(), Options{
		Version: "v0.0.1-test.1", Dist: dist, RepoRoot: testenv.RepoRoot(), Repository: repository,
		ImagePlatforms: platforms, CLIPlatforms: []Platform{host}, Out: &progress,
		SignKey: signKey, SignKeyPassword: []byte("pw"),
	})
	g.Expect(err).NotTo(HaveOccurred(), progress.String())
	for _, line := range []string{"✓ operator-image/", "✓ install.yaml", "✓ Helm chart", "✓ Flux OCI artifact", "✓ polykube-status binaries", "✓ krew plugin", "✓ cosign signatures", "✓ SHA256SUMS"} {
		g.Expect(progress.String()).To(ContainSubstring(line))
	}

	// The layout's index.json points to one image index, tagged with the version, holding one
	// image per platform, each running the operator as non-root.
	lp, err := layout.FromPath(filepath.Join(dist, ImageDir))
	g.Expect(err).NotTo(HaveOccurred())
	top, err := lp.ImageIndex()
	g.Expect(err).NotTo(HaveOccurred())
	topManifest, err := top.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(topManifest.Manifests).To(HaveLen(1))
	g.Expect(topManifest.Manifests[0].Digest.String()).To(Equal(res.IndexDigest))
	g.Expect(topManifest.Manifests[0].Annotations).To(HaveKeyWithValue("org.opencontainers.image.ref.name", "v0.0.1-test.1"))
	idx, err := top.ImageIndex(topManifest.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	im, err := idx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	var got []string
	for _, m := range im.Manifests {
		g.Expect(m.Platform).NotTo(BeNil())
		got = append(got, m.Platform.OS+"/"+m.Platform.Architecture)
		img, err := idx.Image(m.Digest)
		g.Expect(err).NotTo(HaveOccurred())
		cfg, err := img.ConfigFile()
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Config.User).To(Equal(NonRootUser), "the image must not run as root")
		g.Expect(cfg.Config.Entrypoint).To(Equal([]string{"/polykube-operator"}))
		g.Expect(cfg.Architecture).To(Equal(m.Platform.Architecture))
		g.Expect(cfg.Config.Labels).To(HaveKeyWithValue("org.opencontainers.image.version", "v0.0.1-test.1"))
	}
	var want []string
	for _, p := range platforms {
		want = append(want, p.String())
	}
	g.Expect(got).To(ConsistOf(want))

	// install.yaml runs the image by the index digest, in the repository given.
	install, err := os.ReadFile(filepath.Join(dist, InstallFile))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.ImageRef).To(Equal(repository + "@" + res.IndexDigest))
	g.Expect(string(install)).To(ContainSubstring("image: " + res.ImageRef + "\n"))
	g.Expect(string(install)).NotTo(ContainSubstring("v0.1.0-alpha.1"))
	g.Expect(string(install)).To(ContainSubstring("SET ONE VALUE BEFORE APPLYING"))
	g.Expect(string(install)).To(ContainSubstring("DO NOT UNINSTALL WITH kubectl delete -f"), "deleting the file deletes the CRDs and every Workload: its header must say so")

	// SHA256SUMS covers every file, and each sum is right.
	sums, err := os.Open(filepath.Join(dist, SumsFile))
	g.Expect(err).NotTo(HaveOccurred())
	defer sums.Close()
	listed := map[string]bool{}
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		sum, name, ok := strings.Cut(sc.Text(), "  ")
		g.Expect(ok).To(BeTrue(), "line %q", sc.Text())
		actual, err := fileSHA256(filepath.Join(dist, name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(actual).To(Equal(sum), name)
		listed[name] = true
	}
	g.Expect(listed).To(HaveLen(len(res.Files) - 1))
	g.Expect(listed).To(HaveKey(InstallFile))
	g.Expect(listed).To(HaveKey(SBOMFile))
	g.Expect(listed).To(HaveKey("operator-image/index.json"))
	g.Expect(listed).To(HaveKey(PublicKeyFile))
	g.Expect(listed).To(HaveKey(imageSignature + ".sig"))
	g.Expect(listed).To(HaveKey(gitopsSignature + ".payload"))
	if _, err := exec.LookPath("sha256sum"); err == nil {
		cmd := exec.Command("sha256sum", "--quiet", "-c", SumsFile)
		cmd.Dir = dist
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "sha256sum -c: %s", out)
	}

	// The SBOM is SPDX 2.3 and lists the modules linked into the operator.
	f, err := os.Open(filepath.Join(dist, SBOMFile))
	g.Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	doc, err := spdxjson.Read(f)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(doc.SPDXVersion).To(Equal("SPDX-2.3"))
	var names []string
	for _, p := range doc.Packages {
		names = append(names, p.PackageName)
	}
	g.Expect(names).To(ContainElements("polykube-operator", "sigs.k8s.io/controller-runtime", "k8s.io/client-go", "stdlib"))

	// The gitops artifact has the media types of flux push artifact.
	gp, err := layout.FromPath(filepath.Join(dist, GitopsArtifactDir))
	g.Expect(err).NotTo(HaveOccurred())
	gidx, err := gp.ImageIndex()
	g.Expect(err).NotTo(HaveOccurred())
	gm, err := gidx.IndexManifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(gm.Manifests).To(HaveLen(1))
	artifact, err := gidx.Image(gm.Manifests[0].Digest)
	g.Expect(err).NotTo(HaveOccurred())
	am, err := artifact.Manifest()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(am.Config.MediaType).To(Equal(FluxConfigMediaType))
	g.Expect(am.Layers).To(HaveLen(1))
	g.Expect(am.Layers[0].MediaType).To(Equal(FluxContentMediaType))
	g.Expect(am.Annotations).To(HaveKeyWithValue("org.opencontainers.image.revision", HavePrefix("v0.0.1-test.1@sha1:")))
	g.Expect(listed).To(HaveKey(GitopsFile("v0.0.1-test.1")))

	// The krew manifest names each plugin archive with its checksum.
	krew, err := os.ReadFile(filepath.Join(dist, KrewFile))
	g.Expect(err).NotTo(HaveOccurred())
	archive := "kubectl-polykube_" + host.OS + "_" + host.Arch + ".tar.gz"
	archiveSum, err := fileSHA256(filepath.Join(dist, archive))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(krew)).To(ContainSubstring(archive + "\n    sha256: " + archiveSum))

	// The packaged chart lints clean as a user would get it.
	g.Expect(listed).To(HaveKey(ChartFile("v0.0.1-test.1")))
	ch, err := loader.Load(filepath.Join(dist, ChartFile("v0.0.1-test.1")))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.Metadata.AppVersion).To(Equal("v0.0.1-test.1"))
	unpacked := t.TempDir()
	g.Expect(chartutil.SaveDir(ch, unpacked)).To(Succeed())
	g.Expect(LintChart(filepath.Join(unpacked, ChartName), map[string]any{"clusterName": "east"})).To(Succeed())

	// The CLI binary for this machine says which release it is.
	out, err := exec.Command(filepath.Join(dist, "polykube-status_"+host.OS+"_"+host.Arch), "version").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(HavePrefix("v0.0.1-test.1 (commit "))

	firstSums, err := os.ReadFile(filepath.Join(dist, SumsFile))
	g.Expect(err).NotTo(HaveOccurred())

	// make publish pushes the image index and the artifact, tagged with the version, and the
	// registry serves them by the digests install.yaml and release.json name.
	var pushed strings.Builder
	g.Expect(Publish(context.Background(), PublishOptions{Dist: dist, Insecure: true, Out: &pushed})).To(Succeed())
	g.Expect(pushed.String()).To(ContainSubstring("✓ " + res.ImageRef))
	tag, err := name.NewTag(repository+":v0.0.1-test.1", name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	desc, err := remote.Get(tag)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(desc.Digest.String()).To(Equal(res.IndexDigest))
	artTag, err := name.NewTag(GitopsRepository(repository)+":v0.0.1-test.1", name.Insecure)
	g.Expect(err).NotTo(HaveOccurred())
	artDesc, err := remote.Get(artTag)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(artDesc.Digest.String()).To(Equal(res.GitopsDigest))
	// With their cosign signatures, which verify as Flux verifies them.
	g.Expect(pushed.String()).To(ContainSubstring("✓ signed " + res.ImageRef))
	g.Expect(verifyAsFlux(tag.Context().Digest(res.IndexDigest), trusted)).To(Succeed())
	g.Expect(verifyAsFlux(artTag.Context().Digest(res.GitopsDigest), trusted)).To(Succeed())

	// Nor to another registry than install.yaml names.
	err = Publish(context.Background(), PublishOptions{Dist: dist, Registry: "other.example:5000", Insecure: true})
	g.Expect(err).To(MatchError(ContainSubstring("was built for " + repository + ", not for registry other.example:5000")))

	// A release changed after it was built is not published.
	g.Expect(os.WriteFile(filepath.Join(dist, InstallFile), append(install, []byte("# edited\n")...), 0o644)).To(Succeed())
	err = Publish(context.Background(), PublishOptions{Dist: dist, Insecure: true})
	g.Expect(err).To(MatchError(ContainSubstring("install.yaml: checksum mismatch")))

	// A second run replaces the first (the directory is the release's own) and, from the same
	// commit, writes the same bytes: every file, the chart and the image included (the
	// signatures aside: an ECDSA signature differs each time, and this run is unsigned).
	_, err = Build(context.Background(), Options{Version: "v0.0.1-test.1", Dist: dist, RepoRoot: testenv.RepoRoot(),
		Repository: repository, ImagePlatforms: platforms, CLIPlatforms: []Platform{host}})
	g.Expect(err).NotTo(HaveOccurred())
	secondSums, err := os.ReadFile(filepath.Join(dist, SumsFile))
	g.Expect(err).NotTo(HaveOccurred())
	var unsigned []string
	for _, line := range strings.SplitAfter(string(firstSums), "\n") {
		if !strings.HasSuffix(line, "  "+PublicKeyFile+"\n") && !strings.Contains(line, "  "+SignatureDir+"/") {
			unsigned = append(unsigned, line)
		}
	}
	g.Expect(string(secondSums)).To(Equal(strings.Join(unsigned, "")), "the release is not reproducible")
}
