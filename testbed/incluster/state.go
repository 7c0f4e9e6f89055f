package incluster

import (
	"encoding/json"
	"os"
	"path/filepath"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// State is what an in-cluster run records in its directory.
type State struct {
	Topology *topology.Topology `json:"topology"`
	K0sHosts string             `json:"k0sHosts,omitempty"`
	GitAddr  string             `json:"gitAddr,omitempty"`
	// RegistryAddr is the registry add-on's host:port, recorded at its first start.
	RegistryAddr string `json:"registryAddr,omitempty"`
	// RegistryImage is the Polykube image in the registry, by digest, once pushed.
	RegistryImage string `json:"registryImage,omitempty"`
	Seeded        string `json:"seeded,omitempty"`
	// Operator is the operator Deployment found in the rendered operator base.
	Operator gitrepo.OperatorObject `json:"operator"`
	// ServiceAccount is the operator's ServiceAccount in the rendered operator base.
	ServiceAccount gitrepo.OperatorObject `json:"serviceAccount"`
	// MeshAddresses are the addresses each cluster's clustermesh-apiserver was given to its
	// peers at, by cluster (see reconnectMesh).
	MeshAddresses map[string][]string `json:"meshAddresses,omitempty"`
	// InstalledInGiven records that the clusters, given to the bed rather than created by it,
	// had no Flux or Polykube before Up installed them: Down then takes them out (given.go).
	InstalledInGiven bool `json:"installedInGiven,omitempty"`
}

// stateFile is the state an in-cluster run records in its directory; it marks the directory
// as an in-cluster run for `down --all`.
const stateFile = "datapath.json"

func statePath(dir string) string { return filepath.Join(dir, stateFile) }

func (b *Bed) saveState() error {
	if b.opts.DryRun {
		return nil
	}
	if err := os.MkdirAll(b.opts.Dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(b.state, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(statePath(b.opts.Dir), data, 0o644)
}
