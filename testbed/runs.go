package testbed

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// RunKind is a kind of run that another bed keeps in the same state root (the in-cluster
// bed's kind and k0s runs): a directory holding Marker is torn down by Down, with its own provider,
// and never opened as a kwok run. RecordedRuns finds its runs by the same marker.
type RunKind struct {
	// Marker is the name of the state file that identifies such a run's directory.
	Marker string
	// Down tears down the run recorded in dir and removes the directory.
	Down func(ctx context.Context, dir string, log io.Writer) error
}

var runKinds []RunKind

// RegisterRunKind makes the host bed's DownAll (testbed/host) tear down the runs of another
// kind with their own Down.
func RegisterRunKind(k RunKind) { runKinds = append(runKinds, k) }

// RunKindOf is the registered kind whose marker the directory holds.
func RunKindOf(dir string) (RunKind, bool) {
	for _, k := range runKinds {
		if _, err := os.Stat(filepath.Join(dir, k.Marker)); err == nil {
			return k, true
		}
	}
	return RunKind{}, false
}

// RunRef names a recorded run: its name, its provider and its directory.
type RunRef struct {
	Name, Provider, Dir string
}

// RecordedRuns lists the runs under the state root ("" means DefaultStateRoot()) of every
// provider: a kwok run's state.json, or a registered kind's marker (RegisterRunKind), names
// the topology and its provider.
func RecordedRuns(root string) ([]RunRef, error) {
	if root == "" {
		var err error
		if root, err = DefaultStateRoot(); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	markers := []string{"state.json"}
	for _, k := range runKinds {
		markers = append(markers, k.Marker)
	}
	var runs []RunRef
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		for _, m := range markers {
			data, err := os.ReadFile(filepath.Join(root, e.Name(), m))
			if err != nil {
				continue
			}
			var rec struct {
				Topology struct{ Provider string } `json:"topology"`
			}
			prov := topology.ProviderKwok
			if json.Unmarshal(data, &rec) == nil && rec.Topology.Provider != "" {
				prov = rec.Topology.Provider
			}
			name := e.Name()
			if trimmed, ok := strings.CutSuffix(name, "-"+prov); ok && RunDir(root, trimmed, prov, provider.AddonsInCluster) == filepath.Join(root, name) {
				name = trimmed
			}
			runs = append(runs, RunRef{Name: name, Provider: prov, Dir: filepath.Join(root, e.Name())})
			break
		}
	}
	return runs, nil
}
