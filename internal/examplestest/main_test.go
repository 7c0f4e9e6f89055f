package examplestest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/internal/toolchain"
)

// argoCDVersion is the Argo CD release whose CRDs (Application, ApplicationSet, AppProject)
// the examples are checked against. v3.6 needs Go 1.27; v3.5.7 is served and fits Go 1.26.
const argoCDVersion = "v3.5.7"

// k8sClient talks to the one API server all tests in this package share.
var k8sClient client.Client

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()

	fluxCRDs, err := toolchain.FluxCRDs(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "examplestest: the Flux CRDs are needed to check the Flux objects in examples/: %v\n", err)
		return 1
	}
	argoCRDs, err := argoCDCRDs(ctx)
	if err != nil {
		fmt.Fprintf(os.Stderr, "examplestest: the Argo CD CRDs are needed to check examples/argocd: %v\n", err)
		return 1
	}
	defer os.RemoveAll(argoCRDs)
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "examplestest: a real API server is required: %v\n", err)
		return 1
	}
	defer func() {
		if err := env.Stop(); err != nil {
			fmt.Fprintf(os.Stderr, "examplestest: stop the API server: %v\n", err)
		}
	}()
	// The Argo CD ApplicationSet CRD alone is 1.4 MB: give the API server more than envtest's
	// default 10 s to serve the Flux and Argo CD kinds.
	if _, err := envtest.InstallCRDs(env.Config, envtest.CRDInstallOptions{
		Paths:              []string{fluxCRDs, argoCRDs},
		ErrorIfPathMissing: true,
		MaxTime:            3 * time.Minute,
	}); err != nil {
		fmt.Fprintf(os.Stderr, "examplestest: install the Flux CRDs (%s) and Argo CD CRDs (%s): %v\n", fluxCRDs, argoCRDs, err)
		return 1
	}
	k8sClient, err = client.New(env.Config, client.Options{Scheme: scheme.Scheme})
	if err != nil {
		fmt.Fprintf(os.Stderr, "examplestest: client for %s: %v\n", env.Config.Host, err)
		return 1
	}
	return m.Run()
}

// argoCDCRDs returns a directory with the CRDs of argoCDVersion, taken from the module source
// of github.com/argoproj/argo-cd/v3 (downloaded through the Go module proxy on first use).
func argoCDCRDs(ctx context.Context) (string, error) {
	mod := "github.com/argoproj/argo-cd/v3@" + argoCDVersion
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", mod)
	cmd.Dir = os.TempDir() // outside our module: download only, never touch go.mod
	cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	var info struct{ Dir, Error string }
	if jerr := json.Unmarshal(out, &info); jerr != nil || info.Dir == "" {
		return "", fmt.Errorf("go mod download -json %s: %v %s (is the Go module proxy reachable?)", mod, err, info.Error)
	}
	files, err := filepath.Glob(filepath.Join(info.Dir, "manifests", "crds", "*-crd.yaml"))
	if err != nil || len(files) == 0 {
		return "", fmt.Errorf("no CRDs under %s/manifests/crds (err %v)", info.Dir, err)
	}
	// Copy the CRDs alone: the directory also holds a kustomization.yaml.
	dir, err := os.MkdirTemp("", "argocd-crds-")
	if err != nil {
		return "", err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)), data, 0o644); err != nil {
			return "", err
		}
	}
	return dir, nil
}
