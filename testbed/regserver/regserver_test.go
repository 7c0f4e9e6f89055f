package regserver

import (
	"archive/tar"
	"bytes"
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	ggcrregistry "github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
)

func registryBinary(t *testing.T) string {
	t.Helper()
	tc, err := toolchain.New(toolchain.Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tc.Resolve(context.Background(), toolchain.Registry)
	if err != nil {
		t.Fatalf("the registry test needs the pinned registry binary: %v\nRun `make tools` (or `polykube-testbed tools --build registry`) to build it.", err)
	}
	return r.Path
}

var waitUp = topology.Wait{Timeout: topology.Duration{Duration: time.Minute}, Interval: topology.Duration{Duration: 200 * time.Millisecond}}

// TestRegistry_PushPullAndRestart starts the toolchain's registry on loopback, pushes an image
// with go-containerregistry, pulls it back by tag and by digest, finds its blobs under the
// data directory, and pulls it again from a restarted registry.
func TestRegistry_PushPullAndRestart(t *testing.T) {
	g := gomega.NewWithT(t)
	bin := registryBinary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dir := t.TempDir()
	procs := proc.Dir(filepath.Join(dir, "procs"))
	o := Options{Name: "registry", Binary: bin, Procs: procs, DataDir: filepath.Join(dir, "registry"), Ready: waitUp}
	srv, err := Start(ctx, o)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() {
		if t.Failed() {
			log, _ := os.ReadFile(procs.LogPath("registry"))
			t.Logf("registry log:\n%s", log)
		}
		_ = srv.Stop(context.Background(), waitUp)
	})
	g.Expect(srv.Addr).To(gomega.HavePrefix("127.0.0.1:"))

	img, err := random.Image(4096, 2)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	want, err := img.Digest()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	tag, err := name.NewTag(srv.Addr+"/polykube/probe:v1", name.Insecure)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(remote.Write(tag, img, remote.WithContext(ctx))).To(gomega.Succeed())

	pull := func(ref name.Reference) {
		t.Helper()
		got, err := remote.Image(ref, remote.WithContext(ctx))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		d, err := got.Digest()
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(d).To(gomega.Equal(want))
		layers, err := got.Layers()
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(layers).To(gomega.HaveLen(2))
		for _, l := range layers {
			rc, err := l.Compressed()
			g.Expect(err).NotTo(gomega.HaveOccurred())
			_, err = io.Copy(io.Discard, rc) // verifies the blob's digest as it reads
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(rc.Close()).To(gomega.Succeed())
		}
	}
	pull(tag)
	pull(tag.Context().Digest(want.String()))

	// The blobs and the tag are on disk under the data directory.
	repo := filepath.Join(StorageDir(o.DataDir), "docker", "registry", "v2", "repositories", "polykube", "probe", "_manifests", "tags", "v1")
	_, err = os.Stat(repo)
	g.Expect(err).NotTo(gomega.HaveOccurred(), "the tag should be stored under %s", StorageDir(o.DataDir))

	// A restart on the same port serves what was pushed before.
	g.Expect(srv.Stop(ctx, waitUp)).To(gomega.Succeed())
	_, err = remote.Image(tag, remote.WithContext(ctx))
	g.Expect(err).To(gomega.HaveOccurred(), "a stopped registry must not answer")
	o.Port, err = strconv.Atoi(srv.Addr[strings.LastIndex(srv.Addr, ":")+1:])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	srv, err = Start(ctx, o)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	pull(tag)

	// An unknown tag is an error, not an empty image.
	_, err = remote.Image(tag.Context().Tag("v2"), remote.WithContext(ctx))
	g.Expect(err).To(gomega.HaveOccurred())
}

// TestStart_RefusesAHostName: the listen address is an IP address, and the error says which.
func TestStart_RefusesAHostName(t *testing.T) {
	g := gomega.NewWithT(t)
	_, err := Start(context.Background(), Options{Name: "r", Binary: "/nonexistent", Procs: proc.Dir(t.TempDir()), DataDir: t.TempDir(), Host: "localhost"})
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(`"localhost" is not an IP address`)))
}

func TestConfig_StorageUnderTheDataDir(t *testing.T) {
	g := gomega.NewWithT(t)
	cfg := string(Config("/state/run/registry", "127.0.0.1:5000"))
	g.Expect(cfg).To(gomega.ContainSubstring("rootdirectory: /state/run/registry/storage\n"))
	g.Expect(cfg).To(gomega.ContainSubstring("addr: 127.0.0.1:5000\n"))
}

// TestPullEntrypoint pulls from an index of two platforms the entrypoint file of the one asked
// for, and refuses an image without the file its entrypoint names.
func TestPullEntrypoint(t *testing.T) {
	g := gomega.NewWithT(t)
	srv := httptest.NewServer(ggcrregistry.New(ggcrregistry.Logger(log.New(io.Discard, "", 0))))
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	ctx := context.Background()

	image := func(file, content string) v1.Image {
		var buf bytes.Buffer
		tw := tar.NewWriter(&buf)
		g.Expect(tw.WriteHeader(&tar.Header{Name: file, Mode: 0o555, Size: int64(len(content)), Typeflag: tar.TypeReg})).To(gomega.Succeed())
		_, err := tw.Write([]byte(content))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tw.Close()).To(gomega.Succeed())
		layer, err := tarball.LayerFromReader(&buf)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		img, err := mutate.AppendLayers(empty.Image, layer)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		img, err = mutate.Config(img, v1.Config{Entrypoint: []string{"/manager"}})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return img
	}
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: image("manager", "amd64 binary"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: image("manager", "arm64 binary"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	tag, err := name.NewTag(host + "/polykube/operator:v1")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(remote.WriteIndex(tag, idx)).To(gomega.Succeed())
	d, err := idx.Digest()
	g.Expect(err).NotTo(gomega.HaveOccurred())

	dest := filepath.Join(t.TempDir(), "bin", "operator")
	g.Expect(PullEntrypoint(ctx, host+"/polykube/operator@"+d.String(), "linux", "arm64", dest)).To(gomega.Succeed())
	data, err := os.ReadFile(dest)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(string(data)).To(gomega.Equal("arm64 binary"))
	fi, err := os.Stat(dest)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(fi.Mode().Perm() & 0o111).NotTo(gomega.BeZero())

	wrong := host + "/polykube/wrong:v1"
	wt, err := name.NewTag(wrong)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(remote.Write(wt, image("other", "x"))).To(gomega.Succeed())
	g.Expect(PullEntrypoint(ctx, wrong, "linux", "amd64", dest)).To(gomega.MatchError(gomega.ContainSubstring("has no file /manager, its entrypoint")))
}
