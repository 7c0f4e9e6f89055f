package testbed

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/client-go/rest"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/meshmirror"
	"github.com/polykube/polykube/testbed/promserver"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// Bed is one federation of test clusters with its add-ons (Git server, Flux, operator),
// whatever its provider: the one interface the scenario harness uses, for kwok clusters
// (testbed/host) and for kind and k0s clusters (testbed/incluster) alike.
type Bed interface {
	// Up brings the federation up (or reuses what is already up) and returns when every
	// cluster applied the seeded Git revision.
	Up(ctx context.Context) error
	// Down tears everything down and checks that nothing is left.
	Down(ctx context.Context) error
	// Exists reports whether the run has recorded state (it was brought up, maybe partly).
	Exists() bool
	// Topology is what the run is (or will be).
	Topology() *topology.Topology
	// Capabilities are what the provider's clusters can do beyond the API.
	Capabilities() []provider.Capability
	// AdminConfig is a cluster-admin configuration of a cluster, for checks and set-up.
	AdminConfig(cluster string) (*rest.Config, error)
	// OperatorConfig is what the cluster's operator runs with: a token of its ServiceAccount.
	OperatorConfig(ctx context.Context, cluster string) (*rest.Config, error)
	// Commit commits a change to the federation's Git repository and asks every reachable
	// cluster's Flux to fetch it now; it returns the revision.
	Commit(ctx context.Context, ch gitrepo.Change) (string, error)
	// Stop puts a fault in effect (the component stops) and returns once it is; Start ends
	// it. The cluster is ignored for FaultGit.
	Stop(ctx context.Context, f Fault, cluster string) error
	Start(ctx context.Context, f Fault, cluster string) error
	// WaitDelivered returns once Flux in the clusters (every cluster when none is named)
	// applied the revision.
	WaitDelivered(ctx context.Context, revision string, clusters ...string) error
	// Diagnose writes a diagnostics bundle (processes, components, objects, events) to dir.
	Diagnose(ctx context.Context, dir string) error
	// Status checks the health of every cluster and add-on.
	Status(ctx context.Context) *Report
	// Kubeconfig is where a cluster's admin kubeconfig is, and its context.
	Kubeconfig(cluster string) (path, context string, err error)
	// GitURL is the Git repository the clusters' Flux pulls from ("" before it serves).
	GitURL() string
}

// OperatorKubeconfigs is the optional ability of a bed whose operators run as host processes
// to hand out the kubeconfig file each runs with.
type OperatorKubeconfigs interface {
	OperatorKubeconfig(cluster string) string
}

// OperatorImpersonation is the optional ability to start a cluster's (stopped) operator once
// under another member's --cluster-name, as a Flux entry point copied from another cluster
// would, returning what it printed when it refused to run.
type OperatorImpersonation interface {
	StartOperatorAs(ctx context.Context, cluster, clusterName string) (string, error)
}

// OperatorReplicas is the optional ability of a bed whose operators run as host processes to
// start one more replica of a cluster's running operator under another member's
// --cluster-name, as a rollout with a CLUSTER_NAME copied from another cluster would while its
// old pod still runs, returning what the replica printed when it refused to run.
type OperatorReplicas interface {
	StartReplicaAs(ctx context.Context, cluster, clusterName string) (string, error)
}

// OperatorLeaderElection is the optional ability of a bed whose operators run as host
// processes to run a cluster's operator with leader election on or off (off by default).
type OperatorLeaderElection interface {
	SetOperatorLeaderElection(ctx context.Context, cluster string, on bool) error
}

// OperatorBinaries is the optional ability of a bed whose operators run as host processes to
// run another operator binary in one cluster (an empty binary: the run's own again), as an
// upgrade moves one cluster at a time, and to say which binary a cluster runs.
type OperatorBinaries interface {
	UseOperator(ctx context.Context, cluster, binary string) error
	OperatorBinary(cluster string) (binary string, own bool)
}

// MeshMirror is the optional ability of a bed with the mesh-mirror add-on to report what its
// mesh mirror, standing in for Cilium's endpoint-slice synchronisation, last did.
type MeshMirror interface {
	MeshMirrorStatus(ctx context.Context) (*meshmirror.Status, error)
}

// RegistryAddon is the optional ability of a bed that can run the registry add-on: the
// host:port of the run's OCI registry, plain HTTP (an error for a run without the add-on).
type RegistryAddon interface {
	Registry() (string, error)
}

// PrometheusAddon is the optional ability of a bed that can run the prometheus add-on: a client
// of each cluster's Prometheus (an error for a run without the add-on).
type PrometheusAddon interface {
	Prometheus(cluster string) (*promserver.Server, error)
}

// BedOptions open a bed.
type BedOptions struct {
	// Provider chooses the bed; "" means the topology's provider (kwok by default).
	Provider string
	// Topology is what to bring up; nil means the run's recorded topology.
	Topology *topology.Topology
	// Run names the run; StateRoot ("" means DefaultStateRoot()) holds it.
	Run, StateRoot string
	// Log receives the status lines.
	Log io.Writer

	// What follows is honoured by the beds whose providers can; a bed refuses an option it
	// cannot honour, saying which providers do.

	// SourceDir is the Polykube checkout ("" finds it above the working directory).
	SourceDir string
	// SelfBinary is a lasting polykube-testbed binary that can serve the add-ons run as host
	// processes (the Git server); "" builds one.
	SelfBinary string
	// Retain keeps what Up created when it fails, for debugging.
	Retain bool
	// BuildTools lets Up build missing toolchain binaries from Go module source (kwok).
	BuildTools bool
	// DryRun prints every action and external command instead of running it (kind, k0s).
	DryRun bool
	// Images chooses where the node images come from: upstream or local (kind, k0s).
	Images string
	// K0sHosts is a hosts file: k0s installed on those SSH hosts with k0sctl instead of in
	// Docker; GitListen is this machine's host:port for the Git server, reachable from them.
	K0sHosts, GitListen string
	// Dir is the run's state directory; "" means the run's own under StateRoot (RunDir). The
	// in-cluster bed honours it (its `down --all` opens a run by its directory).
	Dir string
	// Runner runs the bed's external commands (docker, k0sctl, ssh); nil runs them, or prints
	// them with DryRun. Tests fake the provider boundary with it (the in-cluster bed).
	Runner execx.Runner
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// bedPackages say, for the error of a program that links in no bed of a placement, where the
// add-ons of that placement run and which package registers its bed.
var bedPackages = map[provider.Placement]struct{ runs, pkg string }{
	provider.AddonsOnHost:    {"as host processes", "testbed/host"},
	provider.AddonsInCluster: {"in its clusters", "testbed/incluster"},
}

// BedOpener opens a bed of a provider.
type BedOpener func(BedOptions) (Bed, error)

var (
	bedsMu sync.Mutex
	beds   = map[provider.Placement]BedOpener{}
)

// RegisterBed makes OpenBed open with open the beds of every provider whose add-ons run at
// placement: testbed/host registers the host bed, testbed/incluster the
// in-cluster bed. A provider registers itself (provider.Register) and is listed once, in
// providers.go; no bed names it.
func RegisterBed(placement provider.Placement, open BedOpener) {
	bedsMu.Lock()
	defer bedsMu.Unlock()
	beds[placement] = open
}

// BedCapabilities are the capabilities registered for a provider, known before anything is
// brought up; false when no such provider is registered.
func BedCapabilities(providerName string) ([]provider.Capability, bool) {
	reg, err := provider.Lookup(providerName)
	if err != nil {
		return nil, false
	}
	return reg.Capabilities, true
}

// OpenBed opens the bed of the options' provider: the one registered for where that
// provider's add-ons run. It creates nothing.
func OpenBed(o BedOptions) (Bed, error) {
	name := o.Provider
	if name == "" && o.Topology != nil {
		name = o.Topology.Provider
	}
	if name == "" {
		name = topology.ProviderKwok
	}
	o.Provider = name
	if o.Topology != nil && o.Topology.Provider != name {
		top := *o.Topology
		top.Provider = name
		o.Topology = &top
	}
	placement, err := bedPlacement(o)
	if err != nil {
		return nil, err
	}
	bedsMu.Lock()
	open, ok := beds[placement]
	bedsMu.Unlock()
	if !ok {
		// Each bed registers from its own package; a program that does not import it cannot
		// open the runs of its placement.
		where := bedPackages[placement]
		return nil, fmt.Errorf("provider %s runs its add-ons %s, and this program has no such bed (it does not import %s): %w", name, where.runs, where.pkg, provider.ErrNotSupported)
	}
	return open(o)
}

// bedPlacement is where the add-ons of the run o opens run: as its topology says, else as
// the run recorded (a run at a placement other than the provider's default is kept in that
// placement's directory, see RunDir), else the provider's default.
func bedPlacement(o BedOptions) (provider.Placement, error) {
	if o.Topology != nil {
		return provider.PlacementOf(o.Topology)
	}
	reg, err := provider.Lookup(o.Provider)
	if err != nil {
		return "", err
	}
	if len(reg.Placements) > 1 {
		root := o.StateRoot
		if root == "" {
			if root, err = DefaultStateRoot(); err != nil {
				return "", err
			}
		}
		run := cmpOr(o.Run, topology.Default().Name)
		for _, p := range reg.Placements[1:] {
			if _, err := os.Stat(RunDir(root, run, o.Provider, p)); err == nil {
				return p, nil
			}
		}
	}
	return reg.Placements[0], nil
}

// RunDir is where a run keeps its state under root: a run whose add-ons run on the host
// directly by name, one whose add-ons run in its clusters by name and provider (a kind and a
// kwok run may share a name).
func RunDir(root, run, providerName string, placement provider.Placement) string {
	if placement == provider.AddonsOnHost {
		return filepath.Join(root, run)
	}
	return filepath.Join(root, run+"-"+providerName)
}

// ProviderFlag is the --provider flag a command on a run of top needs: none for a run kept
// directly by name (RunDir: its add-ons run on the host), whose recorded state names its
// provider.
func ProviderFlag(top *topology.Topology) string {
	pl, err := provider.PlacementOf(top)
	if err == nil && RunDir("", "r", top.Provider, pl) == "r" {
		return ""
	}
	return " --provider " + top.Provider
}

// ErrOperatorRan is returned by StartOperatorAs and StartReplicaAs when the operator did not
// refuse to run.
var ErrOperatorRan = errors.New("the operator did not refuse to run")
