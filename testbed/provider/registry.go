package provider

import (
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/topology"
)

// Placement is where the test bed runs a federation's add-ons (Git server, Flux, operator)
// beside a provider's clusters.
type Placement string

const (
	// AddonsOnHost runs the add-ons as processes of this machine, each with the kubeconfig of
	// its cluster (the host bed; kwok's clusters run no real pods).
	AddonsOnHost Placement = topology.PlacementHost
	// AddonsInCluster runs them as workloads in the clusters, from images built here, with
	// Cilium ClusterMesh as the network between them (the in-cluster bed).
	AddonsInCluster Placement = topology.PlacementCluster
)

// Setup is what a bed builds a provider with: the options every provider takes, and the facts
// of the run and of this machine that some providers need. Each provider reads only those it
// uses; a field a provider does not know is left alone.
type Setup struct {
	Options
	// Runner runs the provider's external commands (docker, k0sctl, ssh) or, in a dry run,
	// prints them; nil means running them.
	Runner execx.Runner
	// Tools are the toolchain binaries the bed resolved for the provider's ToolGroups, by
	// tool name (kwok's control-plane binaries).
	Tools map[string]string
	// NodeImage is the node image to run; "" means the provider's default.
	NodeImage string
	// Images is the topology's image source (upstream or local): with local images a
	// provider names the pod images its nodes carry instead of its project's own (k0s).
	Images string
	// KubeProxy keeps kube-proxy in the clusters; false when the CNI replaces it (Cilium with
	// kubeProxyReplacement).
	KubeProxy bool
	// CgroupV1 says this machine's container runtime runs containers on cgroup v1.
	CgroupV1 bool
	// HostsFile lists SSH hosts to install the clusters on instead of containers (k0s).
	HostsFile string
}

// Registration is how a provider package makes itself known to the test bed: from its init,
// with one call of Register. Nothing else in the test bed names a provider; the bed that
// runs the provider's clusters is the one registered for its Placement.
type Registration struct {
	// Name is the provider's name as a topology writes it.
	Name string
	// Capabilities are what every cluster of the provider can do, known before one exists
	// (the scenario runner plans from them).
	Capabilities []Capability
	// Placements are where the add-ons can run beside this provider's clusters, its default
	// first; a topology's addonPlacement chooses among them.
	Placements []Placement
	// ToolGroups are the toolchain groups the bed resolves (or builds) for the provider
	// before it creates anything; their binaries reach New as Setup.Tools.
	ToolGroups []string
	// New builds the provider for a run. It creates nothing.
	New func(Setup) (Provider, error)
}

var (
	registryMu sync.Mutex
	registry   = map[string]Registration{}
)

// Register makes a provider known. It panics on a registration without a name, a
// constructor or a placement, or on a second registration of a name: both are programming
// errors found by the first test that imports the package.
func Register(r Registration) {
	registryMu.Lock()
	defer registryMu.Unlock()
	if r.Name == "" || r.New == nil || len(r.Placements) == 0 {
		panic(fmt.Sprintf("provider.Register: %q needs a name, a constructor and a placement", r.Name))
	}
	if _, dup := registry[r.Name]; dup {
		panic(fmt.Sprintf("provider.Register: provider %q registered twice", r.Name))
	}
	registry[r.Name] = r
}

// Lookup returns the registration of a provider. The error of an unknown one names the
// registered providers.
func Lookup(name string) (Registration, error) {
	registryMu.Lock()
	r, ok := registry[name]
	registryMu.Unlock()
	if !ok {
		return Registration{}, fmt.Errorf("unknown provider %q (%w); use one of %s", name, ErrNotSupported, strings.Join(Names(), ", "))
	}
	return r, nil
}

// PlacementOf is where the add-ons of a topology run: its addonPlacement, or its provider's
// default. The error says so when the provider cannot run them there.
func PlacementOf(top *topology.Topology) (Placement, error) {
	r, err := Lookup(top.Provider)
	if err != nil {
		return "", err
	}
	if top.AddonPlacement == "" {
		return r.Placements[0], nil
	}
	p := Placement(top.AddonPlacement)
	if !slices.Contains(r.Placements, p) {
		why := map[Placement]string{
			AddonsOnHost:    "their network, Cilium, is installed by the in-cluster bed with the add-ons",
			AddonsInCluster: "its clusters run no real pods",
		}[p]
		return "", fmt.Errorf("addonPlacement: provider %s cannot run the add-ons in %s (%s); use %s or leave addonPlacement out", r.Name, p, why, r.Placements[0])
	}
	return p, nil
}

// Names are the registered providers, sorted.
func Names() []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	names := make([]string, 0, len(registry))
	for n := range registry {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NamesAt are the registered providers whose add-ons run at placement by default (the first of
// their Placements), sorted: the ones a message names for what only that placement does.
func NamesAt(p Placement) []string {
	registryMu.Lock()
	defer registryMu.Unlock()
	var names []string
	for n, r := range registry {
		if r.Placements[0] == p {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Join lists names for a message: "a", "a or b", "a, b or c" (conj "or"), prefixing each
// with prefix ("--provider ").
func Join(names []string, conj, prefix string) string {
	quoted := make([]string, len(names))
	for i, n := range names {
		quoted[i] = prefix + n
	}
	if len(quoted) < 2 {
		return strings.Join(quoted, "")
	}
	return strings.Join(quoted[:len(quoted)-1], ", ") + " " + conj + " " + quoted[len(quoted)-1]
}

// RegistryHostsDir is where a node's containerd looks for the hosts.toml of a registry, one
// directory per registry host:port: containerd 2's default (its CRI's registry config_path,
// k0s's nodes), and where kind's nodes are told to look.
const RegistryHostsDir = "/etc/containerd/certs.d"

// RegistryHostsTOML is the hosts.toml that makes containerd pull from addr (host:port) over
// plain HTTP, for resolving and pulling only.
func RegistryHostsTOML(addr string) string {
	return fmt.Sprintf("server = \"http://%s\"\n\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n", addr, addr)
}
