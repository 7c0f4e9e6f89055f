package harness

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/topology"
)

// OpenFunc brings up (or reuses) the federation of a topology for the suite.
type OpenFunc func(ctx context.Context, top *topology.Topology, log io.Writer) (Federation, error)

// Open is how the suite gets its federation: the bed of the topology's provider (bed.go).
var Open OpenFunc = openBed

// ProviderCapabilities are the capabilities a test-bed provider's federation has, known
// before anything is brought up, so the runner can report what it will not run.
// They are those the provider's bed registered (testbed.RegisterBed).
func ProviderCapabilities(provider string) []string {
	caps, _ := testbed.BedCapabilities(provider)
	out := make([]string, len(caps))
	for i, c := range caps {
		out[i] = string(c)
	}
	return out
}

// TopologyEnv names a topology file that replaces the one config.yaml names, for example
// topology-kind.yaml to run the features on kind clusters (`make e2e PROVIDER=kind` sets it).
// A relative path is relative to the directory of the config file.
const TopologyEnv = "POLYKUBE_SCENARIO_TOPOLOGY"

// ImagesEnv chooses where a datapath topology's images come from, replacing its images field:
// local (built here by `polykube-testbed images build`, nothing pulled) or upstream (pulled by
// the nodes). `make e2e PROVIDER=kind IMAGES=local` sets it.
const ImagesEnv = "POLYKUBE_SCENARIO_IMAGES"

// ApplyImages applies $POLYKUBE_SCENARIO_IMAGES to a loaded topology.
func ApplyImages(top *topology.Topology) error {
	v := os.Getenv(ImagesEnv)
	if v == "" {
		return nil
	}
	if v != topology.ImagesLocal && v != topology.ImagesUpstream {
		return fmt.Errorf("$%s is %q: use %s (images built here) or %s (pulled by the nodes)", ImagesEnv, v, topology.ImagesLocal, topology.ImagesUpstream)
	}
	top.Images = v
	return nil
}

// SelectTopology applies $POLYKUBE_SCENARIO_TOPOLOGY to a configuration loaded from
// configFile, and returns the topology file to use.
func SelectTopology(cfg *Config, configFile string) (string, error) {
	file := os.Getenv(TopologyEnv)
	if file == "" {
		return cfg.Topology, nil
	}
	if !filepath.IsAbs(file) {
		file = filepath.Join(filepath.Dir(configFile), file)
	}
	if _, err := os.Stat(file); err != nil {
		return "", fmt.Errorf("$%s names %s: %w; name a topology file such as topology-kind.yaml (relative to %s)", TopologyEnv, file, err, filepath.Dir(configFile))
	}
	cfg.Topology = file
	return file, nil
}
