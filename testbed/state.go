package testbed

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Scheme knows the kinds the test bed reads and writes: core, CRDs, Flux and Polykube.
var Scheme = runtime.NewScheme()

func init() {
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme,
		sourcev1.AddToScheme, kustomizev1.AddToScheme, polykubev1alpha1.AddToScheme} {
		if err := add(Scheme); err != nil {
			panic(err)
		}
	}
}

// DefaultStateRoot is ${XDG_STATE_HOME:-~/.local/state}/polykube/testbed.
func DefaultStateRoot() (string, error) {
	if d := os.Getenv("POLYKUBE_TESTBED_STATE_DIR"); d != "" {
		return d, nil
	}
	base := os.Getenv("XDG_STATE_HOME")
	if base == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("find the state directory: %w (set XDG_STATE_HOME or --state-dir)", err)
		}
		base = filepath.Join(home, ".local", "state")
	}
	return filepath.Join(base, "polykube", "testbed"), nil
}

// ReadRecorded reads a run's recorded state of type T from path (JSON, as a bed saves it);
// nil and no error when nothing is recorded there. Both beds read their state.json with it.
func ReadRecorded[T any](path string) (*T, error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err // an *fs.PathError: it names the path
	}
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	return &v, nil
}
