package host

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"strconv"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/regserver"
	"github.com/polykube/polykube/testbed/topology"
)

// The registry add-on runs one OCI registry for the whole run, as a process of this machine
// (distribution's, built by the toolchain): plain HTTP on topology.registry.address, its blobs
// under registry/ in the run's state directory, so `down` removes them with the run. A release
// is published to it and Flux and the operator add-on pull from it, as on a user's fleet.

const registryProc = "registry"

// RegistryState records the registry add-on.
type RegistryState struct {
	// Addr is host:port, recorded at its first start so that a restart keeps the references
	// that name it valid.
	Addr string `json:"addr,omitempty"`
}

// upRegistry starts the run's registry (on the port recorded at its first start).
func (tb *Testbed) upRegistry(ctx context.Context) error {
	bin, err := tb.binary(toolchain.Registry)
	if err != nil {
		return err
	}
	var port int
	if tb.state.Registry.Addr != "" {
		_, p, err := net.SplitHostPort(tb.state.Registry.Addr)
		if err != nil {
			return fmt.Errorf("the run's recorded registry address %q: %w", tb.state.Registry.Addr, err)
		}
		if port, err = strconv.Atoi(p); err != nil {
			return fmt.Errorf("the run's recorded registry address %q: %w", tb.state.Registry.Addr, err)
		}
	}
	srv, err := regserver.Start(ctx, regserver.Options{
		Name: registryProc, Binary: bin, Procs: tb.procs, DataDir: filepath.Join(tb.dir, "registry"),
		Host: tb.state.Topology.Registry.Address, Port: port, Ready: tb.wait(topology.WaitProcess),
	})
	if err != nil {
		return err
	}
	tb.mu.Lock()
	tb.state.Registry.Addr = srv.Addr
	tb.mu.Unlock()
	return tb.saveState()
}

// Registry is the host:port of the run's registry (plain HTTP).
func (tb *Testbed) Registry() (string, error) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if tb.state.Registry.Addr == "" {
		return "", fmt.Errorf("the run has no registry: add the %s add-on to the topology", topology.AddonRegistry)
	}
	return tb.state.Registry.Addr, nil
}

// The host bed can run the registry add-on.
var _ testbed.RegistryAddon = (*Testbed)(nil)
