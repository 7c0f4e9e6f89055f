// Package incluster is the in-cluster bed: the testbed.Bed of a run whose add-ons run as
// workloads in its clusters (addonPlacement: cluster), the sibling of the host bed (package
// testbed/host).
// It brings up and tears down real clusters (kind or k0s, or existing ones it is given) with
// Cilium ClusterMesh, Flux following the test bed's Git server, and the Polykube operator
// running in every cluster from an image built from the repository. `polykube-testbed up
// --provider kind|k0s` and `demo --provider kind` run it; with --dry-run they print every
// action and every external command instead. Its files follow the jobs of bringing a run up
// (open, preflight, clusters, images, overlay, cilium, git, flux, rollout, down) and the Bed
// methods (bed, status, federation, faults, impersonate, demo, diagnose).
package incluster

import (
	"sync"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/provider/k0s"
	"github.com/polykube/polykube/testbed/provider/kind"
	"github.com/polykube/polykube/testbed/topology"
)

// Provider is what the in-cluster bed uses of a provider that creates the clusters (kind,
// k0s): beyond provider.Provider, each of its abilities below. A provider with fewer (existing
// clusters) is run with the steps those abilities serve left out (see ownsClusters).
type Provider interface {
	provider.Provider
	datapath.ImageLoader
	apiEndpointer
	nodeNetworker
}

// apiEndpointer names the API server as the cluster's own nodes reach it (for Cilium).
type apiEndpointer interface {
	APIServerEndpoint(cluster string) (host string, port int)
}

// nodeNetworker names the Docker network of the nodes, or "" when they are not containers.
type nodeNetworker interface {
	DockerNetwork() string
}

var (
	_ Provider = (*kind.Provider)(nil)
	_ Provider = (*k0s.Provider)(nil)
)

// Bed is one run of the in-cluster bed.
type Bed struct {
	opts  Options
	state *State
	prov  provider.Provider
	env   *datapath.Env
	procs proc.Dir
	host  host

	// overlayMTU is the WireGuard interface's MTU on an isolated topology (Cilium's MTU), set
	// once the overlay is up; 0 otherwise.
	overlayMTU int

	// opConfigs are the operator configurations OperatorConfig issued, per cluster.
	opMu      sync.Mutex
	opConfigs map[string]operatorConfig
}

// Env is the run's datapath environment (members, runner), for the probe and the harness.
func (b *Bed) Env() *datapath.Env { return b.env }

// Provider is the run's provider.
func (b *Bed) Provider() provider.Provider { return b.prov }

// ownsClusters says whether the bed created the clusters (kind, k0s) or was given them
// (existing). In clusters it was given it installs no network (they keep their CNI, and
// their own mesh if any), loads no image into their nodes, checks first that they have no
// Flux or Polykube of their own, and takes out on Down what it put in.
func (b *Bed) ownsClusters() bool { return provider.Has(b.prov, provider.CapabilityCreate) }

// dockerNetwork is the Docker network of the nodes, or "" when they are not containers of
// this host or the provider does not say.
func (b *Bed) dockerNetwork() string {
	if n, ok := b.prov.(nodeNetworker); ok {
		return n.DockerNetwork()
	}
	return ""
}

// Topology is the run's topology.
func (b *Bed) Topology() *topology.Topology { return b.state.Topology }

// GitURL is the clone URL of the run's Git repository.
func (b *Bed) GitURL() string { return gitrepo.URL(b.state.GitAddr) }
