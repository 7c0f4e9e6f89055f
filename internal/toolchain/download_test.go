package toolchain

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// release is a loopback stand-in for an upstream release host, reached through Options.Mirror:
// https://releases.example/v1.2.3/faketool is served at /releases.example/v1.2.3/faketool.
type release struct {
	srv      *httptest.Server
	requests atomic.Int32
	files    map[string][]byte // path below the mirror → body
	delay    time.Duration     // before answering a GET
}

func newRelease(t *testing.T) *release {
	t.Helper()
	r := &release{files: map[string][]byte{}}
	r.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		if req.Method == http.MethodGet && r.delay > 0 {
			select {
			case <-time.After(r.delay):
			case <-req.Context().Done():
				return
			}
		}
		body, ok := r.files[req.URL.Path]
		if !ok {
			http.NotFound(w, req)
			return
		}
		_, _ = w.Write(body)
	}))
	t.Cleanup(r.srv.Close)
	return r
}

func fakeScript(version string) []byte {
	return fmt.Appendf(nil, "#!/bin/sh\necho 'faketool version %s go1.26.8 (linux/amd64)'\n", version)
}

func sum(b []byte) string {
	h := sha256.Sum256(b)
	return hex.EncodeToString(h[:])
}

// downloadEnv is a fake tool published as a plain binary with a bare .sha256 beside it.
func downloadEnv(t *testing.T, opts Options) (*fakeEnv, *release) {
	t.Helper()
	rel := newRelease(t)
	opts.Build = true
	opts.Mirror = rel.srv.URL
	if opts.DownloadTimeout == 0 {
		opts.DownloadTimeout = 5 * time.Second
	}
	e := newFakeEnv(t, opts, "v1.2.3")
	e.tool.url = func(goos, goarch string) (string, string) {
		return "https://releases.example/v1.2.3/faketool-" + goos + "-" + goarch, ""
	}
	e.tool.sums = func(goos, goarch string) (string, string) {
		return "https://releases.example/v1.2.3/faketool-" + goos + "-" + goarch + ".sha256", ""
	}
	return e, rel
}

func (r *release) publish(t *testing.T, e *fakeEnv, binary []byte, sumFile string) {
	t.Helper()
	url, _ := e.tool.url("linux", "amd64")
	path := strings.TrimPrefix(url, "https:/")
	r.files[path] = binary
	if sumFile != "" {
		r.files[path+".sha256"] = []byte(sumFile)
	}
}

func TestDownload_VerifiedReleaseIsUsedWithoutBuilding(t *testing.T) {
	e, rel := downloadEnv(t, Options{})
	bin := fakeScript("v1.2.3")
	rel.publish(t, e, bin, sum(bin)+"\n")

	r, err := e.tc.Resolve(context.Background(), fakeName)
	if err != nil {
		t.Fatalf("Resolve: %v\n%s", err, e.log)
	}
	if r.Source != SourceDownloaded || e.builds.Load() != 0 {
		t.Fatalf("source %s after %d builds, want downloaded with no build\n%s", r.Source, e.builds.Load(), e.log)
	}
	if got, _ := os.ReadFile(e.tc.BinaryPath(e.tool)); !bytes.Equal(got, bin) {
		t.Errorf("the cache does not hold the published binary")
	}
	if !strings.Contains(e.log.String(), "• downloading faketool v1.2.3 from "+rel.srv.URL) {
		t.Errorf("no progress line for the download:\n%s", e.log)
	}
}

func TestDownload_ChecksumMismatchIsRefusedAndNothingCached(t *testing.T) {
	e, rel := downloadEnv(t, Options{})
	e.buildErr = fmt.Errorf("no module proxy in this test")
	bin := fakeScript("v1.2.3")
	other := sum([]byte("another file"))
	rel.publish(t, e, bin, other+"  faketool-linux-amd64\n")

	_, err := e.tc.Resolve(context.Background(), fakeName)
	if err == nil {
		t.Fatal("a download whose checksum differs was accepted")
	}
	for _, want := range []string{"checksum mismatch", "has SHA-256 " + sum(bin), "publishes " + other, "nothing was cached"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not say %q:\n%v", want, err)
		}
	}
	if _, serr := os.Stat(e.tc.BinaryPath(e.tool)); !os.IsNotExist(serr) {
		t.Errorf("the refused download is in the cache (stat: %v)", serr)
	}
	entries, _ := os.ReadDir(strings.TrimSuffix(e.tc.BinaryPath(e.tool), "/"+fakeName))
	if len(entries) != 0 {
		t.Errorf("the cache slot holds leftovers of the refused download: %v", entries)
	}
}

func TestDownload_FallsBackToTheBuild(t *testing.T) {
	tests := []struct {
		name    string
		prepare func(t *testing.T, e *fakeEnv, rel *release)
		say     string
	}{
		{"checksum mismatch", func(t *testing.T, e *fakeEnv, rel *release) {
			rel.publish(t, e, fakeScript("v1.2.3"), sum([]byte("x")))
		}, "checksum mismatch"},
		{"no published checksum", func(t *testing.T, e *fakeEnv, rel *release) {
			rel.publish(t, e, fakeScript("v1.2.3"), "")
		}, "the published checksum: GET"},
		{"binary missing upstream", func(t *testing.T, e *fakeEnv, rel *release) {}, "404 Not Found"},
		{"slow upstream", func(t *testing.T, e *fakeEnv, rel *release) {
			bin := fakeScript("v1.2.3")
			rel.publish(t, e, bin, sum(bin))
			rel.delay = time.Minute
		}, "context deadline exceeded"},
		{"release of another version", func(t *testing.T, e *fakeEnv, rel *release) {
			bin := fakeScript("v1.2.4")
			rel.publish(t, e, bin, sum(bin))
		}, "reports v1.2.4, want v1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, rel := downloadEnv(t, Options{DownloadTimeout: 300 * time.Millisecond})
			tt.prepare(t, e, rel)
			start := time.Now()
			r, err := e.tc.Resolve(context.Background(), fakeName)
			if err != nil {
				t.Fatalf("Resolve: %v", err)
			}
			if r.Source != SourceBuilt || e.builds.Load() != 1 {
				t.Errorf("source %s after %d builds, want built once", r.Source, e.builds.Load())
			}
			if !strings.Contains(e.log.String(), tt.say) || !strings.Contains(e.log.String(), "building faketool from module source instead") {
				t.Errorf("the log does not say why it built (%q):\n%s", tt.say, e.log)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the fallback took %s; the download must be bounded", took)
			}
		})
	}
}

func TestDownload_OfflineMakesNoRequest(t *testing.T) {
	e, rel := downloadEnv(t, Options{})
	bin := fakeScript("v1.2.3")
	rel.publish(t, e, bin, sum(bin))
	t.Setenv("POLYKUBE_OFFLINE", "1")
	tc, err := newToolchain(Options{Build: true, Mirror: rel.srv.URL, CacheDir: t.TempDir(), Log: e.log}, []*Tool{e.tool})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tc.Resolve(context.Background(), fakeName)
	if err != nil {
		t.Fatal(err)
	}
	if r.Source != SourceBuilt || rel.requests.Load() != 0 {
		t.Errorf("offline: source %s, %d requests to the release host; want built with none", r.Source, rel.requests.Load())
	}
}

func TestDownload_UnreachableHostIsProbedOncePerRun(t *testing.T) {
	e, rel := downloadEnv(t, Options{ProbeTimeout: 500 * time.Millisecond})
	rel.srv.Close() // nothing answers on that port any more
	second := &Tool{Name: "othertool", Version: "v1.2.3", Module: "example.com/othertool", Package: "example.com/othertool",
		probeArgs: []string{"--version"}, url: e.tool.url, sums: e.tool.sums, build: e.tool.build}
	tc, err := newToolchain(Options{Build: true, Mirror: rel.srv.URL, ProbeTimeout: 500 * time.Millisecond, CacheDir: t.TempDir(), Log: e.log},
		[]*Tool{e.tool, second})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := tc.ResolveAll(context.Background(), fakeName, "othertool"); err != nil {
		t.Fatal(err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("two tools with an unreachable release host took %s", took)
	}
	if len(tc.reachable) != 1 || tc.reachable[strings.TrimPrefix(rel.srv.URL, "http://")] == nil {
		t.Errorf("probe results = %v, want one failed probe of the mirror's host", tc.reachable)
	}
}

// etcd and tofu publish archives and one list of sums for all of them.
func TestDownload_ArchiveWithSumsList(t *testing.T) {
	e, rel := downloadEnv(t, Options{})
	e.tool.url = func(goos, goarch string) (string, string) {
		return "https://releases.example/v1.2.3/faketool-" + goos + "-" + goarch + ".tar.gz", "faketool-dir/faketool"
	}
	e.tool.sums = func(goos, goarch string) (string, string) {
		return "https://releases.example/v1.2.3/SHA256SUMS", "faketool-" + goos + "-" + goarch + ".tar.gz"
	}
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	bin := fakeScript("v1.2.3")
	_ = tw.WriteHeader(&tar.Header{Name: "faketool-dir/faketool", Mode: 0o755, Size: int64(len(bin))})
	_, _ = tw.Write(bin)
	_ = tw.Close()
	_ = gz.Close()
	archive := buf.Bytes()
	rel.files["/releases.example/v1.2.3/faketool-linux-amd64.tar.gz"] = archive
	rel.files["/releases.example/v1.2.3/SHA256SUMS"] = []byte(sum([]byte("a")) + "  faketool-darwin-arm64.tar.gz\n" +
		sum(archive) + " *faketool-linux-amd64.tar.gz\n")

	r, err := e.tc.Resolve(context.Background(), fakeName)
	if err != nil {
		t.Fatalf("Resolve: %v\n%s", err, e.log)
	}
	if r.Source != SourceDownloaded {
		t.Errorf("source %s, want downloaded", r.Source)
	}
}

func TestPublishedSum_Formats(t *testing.T) {
	rel := newRelease(t)
	good := sum([]byte("x"))
	rel.files["/bare"] = []byte(good + "\n")
	rel.files["/bare-with-name"] = []byte(good + "  kube-apiserver\n")
	rel.files["/list"] = []byte(sum([]byte("y")) + "  a.zip\n" + strings.ToUpper(good) + "  b.zip\n")
	rel.files["/junk"] = []byte("not-a-sum  b.zip\n")
	tests := []struct{ path, entry, want, err string }{
		{"/bare", "", good, ""},
		{"/bare-with-name", "", good, ""},
		{"/list", "b.zip", good, ""},
		{"/list", "c.zip", "", "lists no c.zip"},
		{"/junk", "b.zip", "", "is not a SHA-256"},
		{"/missing", "", "", "404"},
	}
	for _, tt := range tests {
		got, err := publishedSum(context.Background(), rel.srv.URL+tt.path, tt.entry)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("%s %s: err = %v, want %q", tt.path, tt.entry, err, tt.err)
			}
			continue
		}
		if err != nil || got != tt.want {
			t.Errorf("%s %s = %q, %v; want %q", tt.path, tt.entry, got, err, tt.want)
		}
	}
}
