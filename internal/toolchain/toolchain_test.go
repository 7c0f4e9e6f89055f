package toolchain

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The tests use fake tools: shell scripts that print a version and count their runs. No
// test builds a real binary or touches the network.

const fakeName = "faketool"

// writeFake writes an executable script at path that prints "faketool version <version>"
// and appends a line to path.runs on each run.
func writeFake(t *testing.T, path, version string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	script := fmt.Sprintf("#!/bin/sh\necho run >> \"$0.runs\"\necho 'faketool version %s go1.26.8 (linux/amd64)'\n", version)
	if err := os.WriteFile(path, []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
}

// runs counts how often the fake at path was executed.
func runs(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path + ".runs")
	if errors.Is(err, os.ErrNotExist) {
		return 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return strings.Count(string(data), "run")
}

// fakeEnv is a toolchain over one fake tool pinned at v1.2.3 whose build writes a fake that
// reports buildVersion.
type fakeEnv struct {
	tc       *Toolchain
	tool     *Tool
	pathDir  string // the only directory on $PATH
	log      *bytes.Buffer
	builds   *atomic.Int32
	buildErr error
}

func newFakeEnv(t *testing.T, opts Options, buildVersion string) *fakeEnv {
	t.Helper()
	e := &fakeEnv{pathDir: t.TempDir(), log: &bytes.Buffer{}, builds: &atomic.Int32{}}
	t.Setenv("PATH", e.pathDir)
	t.Setenv("POLYKUBE_OFFLINE", "")
	e.tool = &Tool{
		Name: fakeName, Version: "v1.2.3", Module: "example.com/faketool", Package: "example.com/faketool",
		probeArgs: []string{"--version"},
		build: func(ctx context.Context, tc *Toolchain, out string) error {
			e.builds.Add(1)
			if e.buildErr != nil {
				return e.buildErr
			}
			time.Sleep(50 * time.Millisecond) // long enough for a concurrent run to queue on the lock
			writeFake(t, out, buildVersion)
			return nil
		},
	}
	t.Setenv(e.tool.EnvVar(), "")
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	opts.Log = e.log
	tc, err := newToolchain(opts, []*Tool{e.tool})
	if err != nil {
		t.Fatal(err)
	}
	e.tc = tc
	return e
}

func TestParseVersion(t *testing.T) {
	tests := []struct {
		name, out, want string
	}{
		{"kubernetes", "Kubernetes v1.36.3\n", "v1.36.3"},
		{"etcd", "etcd Version: 3.6.8\nGit SHA: Not provided\nGo Version: go1.26.8\n", "v3.6.8"},
		{"kwok", "kwok version v0.8.0 go1.26.8 (linux/amd64)\n", "v0.8.0"},
		{"tofu", "OpenTofu v1.12.6\non linux_amd64\n", "v1.12.6"},
		{"tofu dev build", "OpenTofu v1.12.6-dev\non linux_amd64\n", "v1.12.6-dev"},
		{"kubernetes unstamped", "Kubernetes v0.0.0-master+$Format:%H$\n", "v0.0.0-master"},
		{"go version only", "built with go1.26.8\n", ""},
		{"nothing", "usage: tool [flags]\n", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := parseVersion(tt.out); got != tt.want {
				t.Errorf("parseVersion(%q) = %q, want %q", tt.out, got, tt.want)
			}
		})
	}
}

func TestVersionMatches(t *testing.T) {
	tests := []struct {
		got, want string
		match     bool
	}{
		{"v1.36.3", "v1.36.3", true},
		{"3.6.8", "v3.6.8", true},
		{"v3.6.8", "3.6.8", true},
		{"v1.36.2", "v1.36.3", false},
		{"v1.12.6-dev", "v1.12.6", false},
		{"v1.36.3", "v1.36.30", false},
		{"", "v1.36.3", false},
	}
	for _, tt := range tests {
		if got := versionMatches(tt.got, tt.want); got != tt.match {
			t.Errorf("versionMatches(%q, %q) = %v, want %v", tt.got, tt.want, got, tt.match)
		}
	}
}

func TestResolve_Order(t *testing.T) {
	tests := []struct {
		name         string
		override     string // "env", "option" or ""
		overrideVer  string
		pathVer      string // version of the fake on $PATH; "" means none
		cacheVer     string // version of the fake in the cache; "" means none
		build        bool
		buildVer     string
		wantSource   Source
		wantVersion  string
		wantBuilds   int32
		wantMissing  bool
		wantErrMatch string
	}{
		{name: "env override wins over everything", override: "env", overrideVer: "v1.2.3", pathVer: "v1.2.3", cacheVer: "v1.2.3",
			wantSource: SourceOverride, wantVersion: "v1.2.3"},
		{name: "option override wins, other version only warns", override: "option", overrideVer: "v9.9.9", pathVer: "v1.2.3",
			wantSource: SourceOverride, wantVersion: "v9.9.9"},
		{name: "path at pinned version wins over cache", pathVer: "v1.2.3", cacheVer: "v1.2.3",
			wantSource: SourcePath, wantVersion: "v1.2.3"},
		{name: "path at other version is skipped for the cache", pathVer: "v1.2.0", cacheVer: "v1.2.3",
			wantSource: SourceCache, wantVersion: "v1.2.3"},
		{name: "cache at other version is not used", cacheVer: "v1.2.0",
			wantMissing: true},
		{name: "nothing and no build is missing", pathVer: "v1.2.0",
			wantMissing: true},
		{name: "nothing and build builds", pathVer: "v1.2.0", build: true, buildVer: "v1.2.3",
			wantSource: SourceBuilt, wantVersion: "v1.2.3", wantBuilds: 1},
		{name: "build of the wrong version is refused", build: true, buildVer: "v1.2.4",
			wantBuilds: 1, wantErrMatch: "reports v1.2.4, want v1.2.3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts := Options{Build: tt.build, Offline: true}
			ovr := filepath.Join(t.TempDir(), "my-faketool")
			if tt.override == "option" {
				opts.Overrides = map[string]string{fakeName: ovr}
			}
			e := newFakeEnv(t, opts, tt.buildVer)
			if tt.override == "env" {
				t.Setenv(e.tool.EnvVar(), ovr)
			}
			if tt.override != "" {
				writeFake(t, ovr, tt.overrideVer)
			}
			if tt.pathVer != "" {
				writeFake(t, filepath.Join(e.pathDir, fakeName), tt.pathVer)
			}
			if tt.cacheVer != "" {
				writeFake(t, e.tc.BinaryPath(e.tool), tt.cacheVer)
			}

			r, err := e.tc.Resolve(context.Background(), fakeName)

			if got := e.builds.Load(); got != tt.wantBuilds {
				t.Errorf("builds = %d, want %d", got, tt.wantBuilds)
			}
			switch {
			case tt.wantMissing:
				if !errors.Is(err, ErrMissing) {
					t.Fatalf("err = %v, want ErrMissing", err)
				}
				return
			case tt.wantErrMatch != "":
				if err == nil || !strings.Contains(err.Error(), tt.wantErrMatch) {
					t.Fatalf("err = %v, want it to contain %q", err, tt.wantErrMatch)
				}
				if _, err := os.Stat(e.tc.BinaryPath(e.tool)); !errors.Is(err, os.ErrNotExist) {
					t.Errorf("a binary that failed verification is in the cache (stat: %v)", err)
				}
				return
			case err != nil:
				t.Fatalf("Resolve: %v", err)
			}
			if r.Source != tt.wantSource || r.Version != tt.wantVersion || r.Name != fakeName {
				t.Errorf("Resolve = %+v, want source %s version %s", r, tt.wantSource, tt.wantVersion)
			}
			if !filepath.IsAbs(r.Path) {
				t.Errorf("path %q is not absolute", r.Path)
			}
		})
	}
}

func TestResolve_ErrorSaysWhatWasTried(t *testing.T) {
	e := newFakeEnv(t, Options{Build: true}, "")
	e.buildErr = errors.New("proxy.golang.org: dial tcp: no route to host")
	// A closed local port stands in for an unreachable upstream.
	e.tool.url = func(goos, goarch string) (string, string) { return "http://127.0.0.1:1/faketool", "" }
	e.tool.sums = func(goos, goarch string) (string, string) { return "http://127.0.0.1:1/faketool.sha256", "" }
	writeFake(t, filepath.Join(e.pathDir, fakeName), "v1.0.0")

	_, err := e.tc.Resolve(context.Background(), fakeName)

	var re *ResolveError
	if !errors.As(err, &re) {
		t.Fatalf("err = %v, want a *ResolveError", err)
	}
	msg := err.Error()
	for _, want := range []string{
		"$PATH: " + filepath.Join(e.pathDir, fakeName) + " is v1.0.0, not v1.2.3",
		"cache: no " + e.tc.BinaryPath(e.tool),
		"build from module source example.com/faketool@v1.2.3: proxy.golang.org: dial tcp: no route to host",
		"download: skipped: 127.0.0.1:1 did not answer within 2s (offline?)",
		"POLYKUBE_FAKETOOL_BINARY",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not say %q:\n%s", want, msg)
		}
	}
	if errors.Is(err, ErrMissing) {
		t.Errorf("a failed build is reported as ErrMissing")
	}
}

func TestResolve_OverrideMustRun(t *testing.T) {
	e := newFakeEnv(t, Options{}, "")
	t.Setenv(e.tool.EnvVar(), filepath.Join(t.TempDir(), "nope"))
	_, err := e.tc.Resolve(context.Background(), fakeName)
	if err == nil || !strings.Contains(err.Error(), "POLYKUBE_FAKETOOL_BINARY=") {
		t.Fatalf("err = %v, want it to name the override variable", err)
	}
}

func TestStamp(t *testing.T) {
	tests := []struct {
		name      string
		change    func(t *testing.T, bin string)
		wantRuns  int // runs of the binary in the cache slot during the second resolution (not of a rebuild, verified before it moves there)
		wantBuild int32
	}{
		{name: "unchanged binary is trusted without running it", change: func(*testing.T, string) {}, wantRuns: 0},
		{name: "touched binary is verified again", change: func(t *testing.T, bin string) {
			later := time.Now().Add(time.Hour)
			if err := os.Chtimes(bin, later, later); err != nil {
				t.Fatal(err)
			}
		}, wantRuns: 1},
		{name: "missing stamp is verified again", change: func(t *testing.T, bin string) {
			if err := os.Remove(filepath.Join(filepath.Dir(bin), ".stamp.json")); err != nil {
				t.Fatal(err)
			}
		}, wantRuns: 1},
		{name: "replaced binary of another version is rebuilt", change: func(t *testing.T, bin string) {
			writeFake(t, bin, "v1.2.4-other")
		}, wantRuns: 1, wantBuild: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newFakeEnv(t, Options{Build: true, Offline: true}, "v1.2.3")
			ctx := context.Background()
			if r, err := e.tc.Resolve(ctx, fakeName); err != nil || r.Source != SourceBuilt {
				t.Fatalf("first Resolve = %+v, %v; want built", r, err)
			}
			bin := e.tc.BinaryPath(e.tool)
			if s := readStamp(filepath.Join(filepath.Dir(bin), ".stamp.json")); !s.fresh(bin) || s.Version != "v1.2.3" || s.Tool != fakeName {
				t.Fatalf("no fresh stamp after the build: %+v", s)
			}
			tt.change(t, bin)
			os.Remove(bin + ".runs")
			e.builds.Store(0)

			r, err := e.tc.Resolve(ctx, fakeName)
			if err != nil {
				t.Fatal(err)
			}
			if got := runs(t, bin); got != tt.wantRuns {
				t.Errorf("cached binary ran %d times, want %d", got, tt.wantRuns)
			}
			if got := e.builds.Load(); got != tt.wantBuild {
				t.Errorf("builds = %d, want %d", got, tt.wantBuild)
			}
			want := SourceCache
			if tt.wantBuild > 0 {
				want = SourceBuilt
			}
			if r.Source != want {
				t.Errorf("source = %s, want %s", r.Source, want)
			}
			if s := readStamp(filepath.Join(filepath.Dir(bin), ".stamp.json")); !s.fresh(bin) {
				t.Errorf("stamp not fresh after the second resolution: %+v", s)
			}
		})
	}
}

func TestStamp_PathBinaryIsProbedOnce(t *testing.T) {
	e := newFakeEnv(t, Options{}, "")
	bin := filepath.Join(e.pathDir, fakeName)
	writeFake(t, bin, "v1.2.3")
	for i := 0; i < 3; i++ {
		if r, err := e.tc.Resolve(context.Background(), fakeName); err != nil || r.Source != SourcePath {
			t.Fatalf("Resolve = %+v, %v", r, err)
		}
	}
	if got := runs(t, bin); got != 1 {
		t.Errorf("$PATH binary ran %d times, want 1", got)
	}
}

func TestLockFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), ".lock-x")
	unlock, err := lockFile(context.Background(), file, nil)
	if err != nil {
		t.Fatal(err)
	}

	var log bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 3*lockPollInterval)
	defer cancel()
	if _, err := lockFile(ctx, file, &log); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second lock while held: err = %v, want deadline exceeded", err)
	}
	if !strings.Contains(log.String(), "waiting for") {
		t.Errorf("a waiting run says nothing: %q", log.String())
	}

	got := make(chan error, 1)
	go func() {
		u, err := lockFile(context.Background(), file, nil)
		if err == nil {
			u()
		}
		got <- err
	}()
	time.Sleep(lockPollInterval / 2)
	unlock()
	select {
	case err := <-got:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("lock not acquired after release")
	}
}

func TestResolve_ConcurrentRunsBuildOnce(t *testing.T) {
	e := newFakeEnv(t, Options{Build: true, Offline: true}, "v1.2.3")
	// A second toolchain on the same cache stands in for a second process: flock locks
	// belong to open files, so they exclude each other within one process too.
	other, err := newToolchain(Options{Build: true, Offline: true, CacheDir: e.tc.CacheDir(), Log: &bytes.Buffer{}}, []*Tool{e.tool})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]Resolved, 4)
	errs := make([]error, 4)
	for i := range results {
		tc := e.tc
		if i%2 == 1 {
			tc = other
		}
		wg.Go(func() { results[i], errs[i] = tc.Resolve(context.Background(), fakeName) })
	}
	wg.Wait()
	for i := range results {
		if errs[i] != nil {
			t.Fatalf("run %d: %v", i, errs[i])
		}
		if results[i].Path != e.tc.BinaryPath(e.tool) {
			t.Errorf("run %d resolved %s", i, results[i].Path)
		}
	}
	if got := e.builds.Load(); got != 1 {
		t.Errorf("builds = %d, want 1", got)
	}
}

func TestResolve_ProgressLines(t *testing.T) {
	e := newFakeEnv(t, Options{Build: true, Offline: true}, "v1.2.3")
	if _, err := e.tc.Resolve(context.Background(), fakeName); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"• building faketool v1.2.3 from module source", "✓ faketool v1.2.3 ("} {
		if !strings.Contains(e.log.String(), want) {
			t.Errorf("log lacks %q:\n%s", want, e.log.String())
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(e.tc.BinaryPath(e.tool)))
	for _, ent := range entries {
		if strings.HasPrefix(ent.Name(), ".build-") {
			t.Errorf("build directory %s left behind", ent.Name())
		}
	}
}

func TestExpand(t *testing.T) {
	tc, err := New(Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		names   []string
		want    string
		wantErr bool
	}{
		{names: []string{"envtest"}, want: "etcd kube-apiserver"},
		{names: []string{"kwok"}, want: "etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwokctl"},
		{names: []string{"kwokctl", "envtest", "etcd"}, want: "kwokctl etcd kube-apiserver"},
		{names: []string{"flux", "tofu"}, want: "source-controller kustomize-controller tofu"},
		{names: []string{"kind-node"}, want: "etcd kube-apiserver kube-controller-manager kube-scheduler kubelet kubeadm kubectl kube-proxy coredns crictl"},
		{names: []string{"k0s-node"}, want: "etcd kube-apiserver kube-controller-manager kube-scheduler kubelet containerd containerd-shim-runc-v2"},
		{names: []string{"argocd"}, want: "argocd kustomize"},
		{names: []string{"prometheus"}, want: "prometheus promtool"},
		{names: []string{"registry"}, want: "registry"},
		{names: nil, want: "etcd kube-apiserver kube-controller-manager kube-scheduler kwok kwokctl source-controller kustomize-controller tofu argocd kustomize prometheus promtool registry kubelet kubeadm kubectl kube-proxy coredns crictl cilium-agent cilium-operator-generic clustermesh-apiserver cilium-cni cilium-dbg cilium-health cilium-health-responder cilium-mount cilium-sysctlfix containerd containerd-shim-runc-v2"},
		{names: []string{"helm"}, wantErr: true},
	}
	for _, tt := range tests {
		got, err := tc.Expand(tt.names...)
		if (err != nil) != tt.wantErr {
			t.Errorf("Expand(%v) err = %v", tt.names, err)
			continue
		}
		if strings.Join(got, " ") != tt.want {
			t.Errorf("Expand(%v) = %v, want %s", tt.names, got, tt.want)
		}
	}
}

func TestPinnedTools(t *testing.T) {
	tc, err := New(Options{CacheDir: "/cache"})
	if err != nil {
		t.Fatal(err)
	}
	all, _ := tc.Expand("all")
	if len(all) != len(pinnedTools()) {
		t.Errorf("group all has %d tools, %d are pinned", len(all), len(pinnedTools()))
	}
	tests := []struct{ tool, envVar, path string }{
		{KubeAPIServer, "POLYKUBE_KUBE_APISERVER_BINARY", "/cache/bin/kube-apiserver/v1.36.3/kube-apiserver"},
		{Etcd, "POLYKUBE_ETCD_BINARY", "/cache/bin/etcd/v3.6.8/etcd"},
		{SourceController, "POLYKUBE_SOURCE_CONTROLLER_BINARY", "/cache/bin/source-controller/v1.9.6/source-controller"},
	}
	for _, tt := range tests {
		tool := tc.Tool(tt.tool)
		if tool.EnvVar() != tt.envVar || tc.BinaryPath(tool) != tt.path {
			t.Errorf("%s: env %s path %s, want %s %s", tt.tool, tool.EnvVar(), tc.BinaryPath(tool), tt.envVar, tt.path)
		}
	}
}

func TestDefaultCacheDir(t *testing.T) {
	tests := []struct{ polykube, xdg, home, want string }{
		{"/p", "/x", "/h", "/p"},
		{"", "/x", "/h", "/x/polykube"},
		{"", "", "/h", "/h/.cache/polykube"},
	}
	for _, tt := range tests {
		t.Setenv("POLYKUBE_CACHE_DIR", tt.polykube)
		t.Setenv("XDG_CACHE_HOME", tt.xdg)
		t.Setenv("HOME", tt.home)
		if got, err := DefaultCacheDir(); err != nil || got != tt.want {
			t.Errorf("DefaultCacheDir() = %q, %v; want %q", got, err, tt.want)
		}
	}
}

func TestScratchGoMod(t *testing.T) {
	var up goMod
	up.Go = "1.26.0"
	up.GoDebug = []struct{ Key, Value string }{{"default", "go1.26"}}
	addReplace := func(oldPath, oldVer, newPath, newVer string) {
		r := up.Replace
		r = append(r, struct {
			Old struct{ Path, Version string }
			New struct{ Path, Version string }
		}{})
		r[len(r)-1].Old.Path, r[len(r)-1].Old.Version = oldPath, oldVer
		r[len(r)-1].New.Path, r[len(r)-1].New.Version = newPath, newVer
		up.Replace = r
	}
	addReplace("k8s.io/api", "", "./staging/src/k8s.io/api", "")
	addReplace("github.com/opencontainers/go-digest", "", "github.com/opencontainers/go-digest", "v1.0.1-0.2022")
	addReplace("github.com/fluxcd/pkg/artifact", "", "github.com/fluxcd/pkg/artifact", "v0.17.0")

	tests := []struct {
		name       string
		tool       Tool
		want, lack []string
	}{
		{
			name: "local replaces dropped by default",
			tool: Tool{Name: "x", Module: "example.com/x", Version: "v1.0.0"},
			want: []string{"module polykube.local/toolchain/x", "go 1.26.0", "\tdefault=go1.26", "require example.com/x v1.0.0",
				"\tgithub.com/opencontainers/go-digest => github.com/opencontainers/go-digest v1.0.1-0.2022"},
			lack: []string{"k8s.io/api", "./staging"},
		},
		{
			name: "local replaces pointed at published versions, extra replaces win",
			tool: Tool{Name: "x", Module: "k8s.io/kubernetes", Version: "v1.36.3",
				localReplace: func(string) string { return "v0.36.3" },
				replace:      map[string]string{"github.com/fluxcd/pkg/artifact": "v0.18.0"}},
			want: []string{"\tk8s.io/api => k8s.io/api v0.36.3", "\tgithub.com/fluxcd/pkg/artifact => github.com/fluxcd/pkg/artifact v0.18.0"},
			lack: []string{"./staging", "v0.17.0"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := scratchGoMod(&tt.tool, up)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("go.mod lacks %q:\n%s", w, got)
				}
			}
			for _, l := range tt.lack {
				if strings.Contains(got, l) {
					t.Errorf("go.mod has %q:\n%s", l, got)
				}
			}
		})
	}
}

func TestWithModMod(t *testing.T) {
	tests := []struct{ in, want string }{
		{"", "-mod=mod"},
		{"-buildvcs=false", "-buildvcs=false -mod=mod"},
		{"-mod=vendor -trimpath", "-trimpath -mod=mod"},
	}
	for _, tt := range tests {
		if got := withModMod(tt.in); got != tt.want {
			t.Errorf("withModMod(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestEnvtestAssets(t *testing.T) {
	dir := t.TempDir()
	var overrides = map[string]string{}
	for _, name := range []string{Etcd, KubeAPIServer} {
		bin := filepath.Join(dir, name)
		version := KubernetesVersion
		if name == Etcd {
			version = strings.TrimPrefix(EtcdVersion, "v")
		}
		writeFake(t, bin, version)
		overrides[name] = bin
	}
	tc, err := New(Options{CacheDir: t.TempDir(), Overrides: overrides, Log: &bytes.Buffer{}})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ { // twice: the second call finds the links in place
		assets, err := tc.EnvtestAssets(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{Etcd, KubeAPIServer} {
			if target, err := os.Readlink(filepath.Join(assets, name)); err != nil || target != overrides[name] {
				t.Errorf("%s/%s -> %q (%v), want %s", assets, name, target, err, overrides[name])
			}
		}
	}
}

// TestArgoCD_BuildsFromTheModuleWithItsOwnGo checks the recipe of the Argo CD build: its
// go.mod's ./gitops-engine replace points at the published module of the same version (the
// module zip lacks the directory), and every go command of the build runs with Go 1.27.
func TestArgoCD_BuildsFromTheModuleWithItsOwnGo(t *testing.T) {
	var argo *Tool
	for _, tl := range pinnedTools() {
		if tl.Name == ArgoCD {
			argo = tl
		}
	}
	if argo == nil {
		t.Fatal("no argocd tool")
	}
	var up goMod
	up.Go = "1.27.0"
	up.Replace = append(up.Replace, struct {
		Old struct{ Path, Version string }
		New struct{ Path, Version string }
	}{Old: struct{ Path, Version string }{Path: "github.com/argoproj/argo-cd/gitops-engine/v3"}, New: struct{ Path, Version string }{Path: "./gitops-engine"}})
	gomod := scratchGoMod(argo, up)
	for _, want := range []string{"require github.com/argoproj/argo-cd/v3 " + ArgoCDVersion, "github.com/argoproj/argo-cd/gitops-engine/v3 => github.com/argoproj/argo-cd/gitops-engine/v3 " + ArgoCDVersion} {
		if !strings.Contains(gomod, want) {
			t.Errorf("the build module lacks %q:\n%s", want, gomod)
		}
	}
	if !slices.Contains(argo.env, "GOTOOLCHAIN="+ArgoCDGoToolchain) {
		t.Errorf("the Argo CD build runs without GOTOOLCHAIN=%s: %v", ArgoCDGoToolchain, argo.env)
	}
}

// Prometheus reports its release number (3.16.0), not its Go module version (v0.316.0): the
// probe maps the one to the other, and any other release is still a mismatch.
func TestProbe_ReleaseVersion(t *testing.T) {
	dir := t.TempDir()
	tool := &Tool{Name: fakeName, Version: "v0.316.0", releaseVersion: "3.16.0", probeArgs: []string{"--version"}}
	for _, tt := range []struct{ reports, want string }{
		{"3.16.0", "v0.316.0"},
		{"3.15.1", "v3.15.1"},
		{"0.316.0", "v0.316.0"},
	} {
		path := filepath.Join(dir, tt.reports, fakeName)
		writeFake(t, path, tt.reports)
		got, err := tool.probe(context.Background(), path)
		if err != nil {
			t.Fatal(err)
		}
		if got != tt.want {
			t.Errorf("a binary reporting %s probes as %s, want %s", tt.reports, got, tt.want)
		}
	}
}

// The Prometheus tools build from the module version, report the release number, and download
// the release archive whose name carries that number.
func TestPrometheus_ModuleAndRelease(t *testing.T) {
	for _, tl := range pinnedTools() {
		if tl.Name != Prometheus && tl.Name != Promtool {
			continue
		}
		if tl.Version != PrometheusVersion || tl.Package != "github.com/prometheus/prometheus/cmd/"+tl.Name {
			t.Errorf("%s builds %s@%s", tl.Name, tl.Package, tl.Version)
		}
		url, member := tl.url("linux", "amd64")
		if want := "https://github.com/prometheus/prometheus/releases/download/v3.16.0/prometheus-3.16.0.linux-amd64.tar.gz"; url != want {
			t.Errorf("%s downloads %s, want %s", tl.Name, url, want)
		}
		if want := "prometheus-3.16.0.linux-amd64/" + tl.Name; member != want {
			t.Errorf("%s extracts %s, want %s", tl.Name, member, want)
		}
		if _, entry := tl.sums("linux", "amd64"); entry != "prometheus-3.16.0.linux-amd64.tar.gz" {
			t.Errorf("%s checks the sum of %s", tl.Name, entry)
		}
	}
}
