// Package testenv starts real kube-apiserver + etcd pairs (controller-runtime envtest) from the
// hermetic toolchain, with the Polykube CRDs installed, for integration tests.
package testenv

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func init() {
	// Every test client understands the Polykube kinds.
	if err := polykubev1alpha1.AddToScheme(scheme.Scheme); err != nil {
		panic(err)
	}
}

// RepoRoot is the repository root, found from this file's location.
func RepoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
}

// CRDDir is where controller-gen writes the Polykube CRDs.
func CRDDir() string { return filepath.Join(RepoRoot(), "operator", "config", "crd", "bases") }

// startTimeout bounds the start of kube-apiserver and etcd; KUBEBUILDER_CONTROLPLANE_START_TIMEOUT
// overrides it as it does for envtest.
var startTimeout = func() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("KUBEBUILDER_CONTROLPLANE_START_TIMEOUT")); err == nil && d > 0 {
		return d
	}
	return 3 * time.Minute
}()

// Options tune an environment.
type Options struct {
	// ExtraCRDDirs are installed beside the Polykube CRDs.
	ExtraCRDDirs []string
}

// Env is one running API server with its etcd.
type Env struct {
	*envtest.Environment
	Config *rest.Config
}

// Start starts an API server and etcd and installs the CRDs. Call Stop when done.
func Start(ctx context.Context, opts Options) (*Env, error) {
	assets, err := AssetsDir(ctx)
	if err != nil {
		return nil, err
	}
	e := &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     append([]string{CRDDir()}, opts.ExtraCRDDirs...),
		ErrorIfCRDPathMissing: true,
		Scheme:                scheme.Scheme,
		// envtest's defaults (20 s to start, 10 s to establish CRDs) are too short on a loaded
		// 2-core machine where `go test ./...` runs several packages at once.
		ControlPlaneStartTimeout: startTimeout,
		ControlPlaneStopTimeout:  time.Minute,
		CRDInstallOptions:        envtest.CRDInstallOptions{MaxTime: 2 * time.Minute},
	}
	cfg, err := e.Start()
	if err != nil {
		return nil, fmt.Errorf("start kube-apiserver and etcd from %s: %w", assets, err)
	}
	return &Env{Environment: e, Config: cfg}, nil
}

// AssetsDir returns the directory holding kube-apiserver and etcd: $KUBEBUILDER_ASSETS when set,
// else the hermetic toolchain's cache.
func AssetsDir(ctx context.Context) (string, error) {
	if d := os.Getenv("KUBEBUILDER_ASSETS"); d != "" {
		return d, nil
	}
	return toolchainAssets(ctx)
}

// GVK is a shorthand for Polykube kinds in tests.
func GVK(kind string) schema.GroupVersionKind { return polykubev1alpha1.GroupVersion.WithKind(kind) }
