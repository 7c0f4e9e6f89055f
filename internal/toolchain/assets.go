package toolchain

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// EnvtestAssets returns a directory holding kube-apiserver and etcd (symlinks to the
// resolved binaries), suitable for KUBEBUILDER_ASSETS. It builds them when the toolchain
// builds.
func (tc *Toolchain) EnvtestAssets(ctx context.Context) (string, error) {
	resolved, err := tc.ResolveAll(ctx, "envtest")
	if err != nil {
		return "", err
	}
	dir := filepath.Join(tc.dir, "envtest", KubernetesVersion+"-etcd-"+EtcdVersion)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	for _, r := range resolved {
		if err := symlinkAtomic(r.Path, filepath.Join(dir, r.Name)); err != nil {
			return "", fmt.Errorf("envtest assets: %w", err)
		}
	}
	return dir, nil
}

// symlinkAtomic points link at target, replacing what was there without a moment in which
// link is missing.
func symlinkAtomic(target, link string) error {
	if cur, err := os.Readlink(link); err == nil && cur == target {
		return nil
	}
	tmp := fmt.Sprintf("%s.tmp-%d", link, os.Getpid())
	os.Remove(tmp)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, link)
}

// fluxCRDModules are the modules whose config/crd/bases hold the Flux CRDs we run.
var fluxCRDModules = []string{
	"github.com/fluxcd/source-controller@" + FluxSourceControllerVersion,
	"github.com/fluxcd/kustomize-controller@" + FluxKustomizeControllerVersion,
}

// FluxCRDs returns a directory holding the CRD YAMLs of the pinned source-controller and
// kustomize-controller, copied from config/crd/bases of their module sources (downloaded
// through the Go module proxy on first use).
func (tc *Toolchain) FluxCRDs(ctx context.Context) (string, error) {
	dir := filepath.Join(tc.dir, "flux-crds", "source-controller-"+FluxSourceControllerVersion+"-kustomize-controller-"+FluxKustomizeControllerVersion)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	unlock, err := lockFile(ctx, filepath.Join(tc.dir, ".lock-flux-crds"), tc.log)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)

	var stderr strings.Builder
	out, err := runGo(ctx, tc.dir, nil, &stderr, append([]string{"mod", "download", "-json"}, fluxCRDModules...)...)
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var n int
	for dec.More() {
		var m struct{ Path, Version, Dir, Error string }
		if err := dec.Decode(&m); err != nil {
			break
		}
		if m.Error != "" {
			return "", fmt.Errorf("flux CRDs: download %s@%s: %s", m.Path, m.Version, m.Error)
		}
		files, _ := filepath.Glob(filepath.Join(m.Dir, "config", "crd", "bases", "*.yaml"))
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return "", err
			}
			if err := os.WriteFile(filepath.Join(tmp, filepath.Base(f)), data, 0o644); err != nil {
				return "", err
			}
			n++
		}
	}
	if err != nil || n == 0 {
		return "", fmt.Errorf("flux CRDs: go mod download %s found %d CRDs: %v\n%s(is the Go module proxy GOPROXY=%s reachable?)",
			strings.Join(fluxCRDModules, " "), n, err, lastLines(stderr.String(), 10), goEnv("GOPROXY"))
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}

// defaultToolchain resolves with the default cache and builds what is missing.
func defaultToolchain() (*Toolchain, error) { return New(Options{Build: true}) }

// Resolve resolves tools and groups with the default cache, building what is missing.
func Resolve(ctx context.Context, names ...string) ([]Resolved, error) {
	tc, err := defaultToolchain()
	if err != nil {
		return nil, err
	}
	return tc.ResolveAll(ctx, names...)
}

// EnvtestAssets returns a KUBEBUILDER_ASSETS directory (kube-apiserver, etcd) from the
// default cache, building what is missing.
func EnvtestAssets(ctx context.Context) (string, error) {
	tc, err := defaultToolchain()
	if err != nil {
		return "", err
	}
	return tc.EnvtestAssets(ctx)
}

// FluxCRDs returns the directory of the pinned Flux CRD YAMLs from the default cache.
func FluxCRDs(ctx context.Context) (string, error) {
	tc, err := defaultToolchain()
	if err != nil {
		return "", err
	}
	return tc.FluxCRDs(ctx)
}

// CiliumChartPath is where the Helm chart lies inside the github.com/cilium/cilium module.
const CiliumChartPath = "install/kubernetes/cilium"

// CiliumChart returns a directory holding Cilium's Helm chart at the pinned CiliumVersion,
// copied from install/kubernetes/cilium of the module source (downloaded through the Go module
// proxy on first use), so that installing Cilium needs neither the cilium CLI nor a chart
// repository.
func (tc *Toolchain) CiliumChart(ctx context.Context) (string, error) {
	return tc.moduleTree(ctx, "cilium-chart", "github.com/cilium/cilium", CiliumVersion, CiliumChartPath, nil)
}

// ArgoCDCRDs returns a directory holding Argo CD's CRDs at the pinned ArgoCDVersion
// (manifests/crds of its module source, with the kustomization.yaml that lists them),
// downloaded through the Go module proxy on first use, with the Go toolchain its go.mod needs.
func (tc *Toolchain) ArgoCDCRDs(ctx context.Context) (string, error) {
	return tc.moduleTree(ctx, "argocd-crds", "github.com/argoproj/argo-cd/v3", ArgoCDVersion, "manifests/crds",
		[]string{"GOTOOLCHAIN=" + ArgoCDGoToolchain})
}

// CiliumChart returns the pinned Cilium Helm chart from the default cache.
func CiliumChart(ctx context.Context) (string, error) {
	tc, err := defaultToolchain()
	if err != nil {
		return "", err
	}
	return tc.CiliumChart(ctx)
}

// ArgoCDGitVerifyWrapper returns the path of git-verify-wrapper.sh at the pinned ArgoCDVersion
// (hack/ of its module source, copied into the cache on first use): Argo CD's image puts it in
// PATH, and the repo-server runs it for every revision it renders (v3.6 still computes the
// deprecated signature information), failing with "permission denied" when it is missing.
func (tc *Toolchain) ArgoCDGitVerifyWrapper(ctx context.Context) (string, error) {
	dir, err := tc.moduleTree(ctx, "argocd-hack", "github.com/argoproj/argo-cd/v3", ArgoCDVersion, "hack",
		[]string{"GOTOOLCHAIN=" + ArgoCDGoToolchain})
	if err != nil {
		return "", err
	}
	return filepath.Join(dir, "git-verify-wrapper.sh"), nil
}

// moduleTree copies the directory sub of module@version into the cache, once, and returns the
// copy. The copy is made in a temporary directory and renamed, so a reader never sees half of it.
func (tc *Toolchain) moduleTree(ctx context.Context, name, module, version, sub string, env []string) (string, error) {
	dir := filepath.Join(tc.dir, name, version)
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	unlock, err := lockFile(ctx, filepath.Join(tc.dir, ".lock-"+name), tc.log)
	if err != nil {
		return "", err
	}
	defer unlock()
	if _, err := os.Stat(dir); err == nil {
		return dir, nil
	}
	var stderr strings.Builder
	out, err := runGo(ctx, tc.dir, env, &stderr, "mod", "download", "-json", module+"@"+version)
	var m struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &m); err != nil || jerr != nil || m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("%s: go mod download %s@%s: %v %s\n%s(is the Go module proxy GOPROXY=%s reachable?)",
			name, module, version, err, m.Error, lastLines(stderr.String(), 10), goEnv("GOPROXY"))
	}
	src := filepath.Join(m.Dir, filepath.FromSlash(sub))
	if _, err := os.Stat(src); err != nil {
		return "", fmt.Errorf("%s: %s@%s has no %s: %w", name, module, version, sub, err)
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
		return "", err
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dir), ".tmp-*")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(tmp)
	// The module cache is read-only; the copy is not, so that the cache can be removed.
	if err := os.CopyFS(tmp, os.DirFS(src)); err != nil {
		return "", fmt.Errorf("%s: copy %s: %w", name, src, err)
	}
	if err := filepath.WalkDir(tmp, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		mode := os.FileMode(0o644)
		if d.IsDir() {
			mode = 0o755
		}
		return os.Chmod(p, mode)
	}); err != nil {
		return "", err
	}
	if err := os.Rename(tmp, dir); err != nil {
		return "", err
	}
	return dir, nil
}
