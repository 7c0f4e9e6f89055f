// Package kind is a datapath test-bed provider: each cluster of the topology is a kind
// cluster made with the kind library (sigs.k8s.io/kind/pkg/cluster; no kind CLI), with the
// default CNI disabled so that Cilium can be installed, the topology's pod and service
// subnets, and kube-proxy left out when Cilium replaces it. Stop and Start stop and start
// the node containers with the docker CLI; images are loaded into every node with kind's
// nodeutils.
package kind

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"

	kinddefaults "sigs.k8s.io/kind/pkg/apis/config/defaults"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"
	"sigs.k8s.io/kind/pkg/cluster/nodes"
	"sigs.k8s.io/kind/pkg/cluster/nodeutils"
	kindlog "sigs.k8s.io/kind/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// Name is the provider's name in a topology.
const Name = topology.ProviderKind

// NodeImage is the node image of the kind release in go.mod (v0.33.0), pinned by digest:
// kind's own default, so that the library and the image always match. It is Kubernetes
// v1.37.0 (kind v0.33.0 names no v1.36 image in its module source).
const NodeImage = kinddefaults.Image

// KubeProxyNone is the kind kubeProxyMode that leaves kube-proxy out (kind's v1alpha4 API
// accepts it but names no constant for it).
const KubeProxyNone kindv1alpha4.ProxyMode = "none"

// APIServerPort is the port of the API server inside the control-plane container, which
// Cilium's kube-proxy replacement talks to (k8sServicePort).
const APIServerPort = 6443

// Options are the kind provider's own settings.
type Options struct {
	// NodeImage is the kindest/node image (default NodeImage).
	NodeImage string
	// Workers is the number of worker nodes per cluster; 0 (the default) makes one node
	// that is control plane and worker at once, which is what a laptop can afford for three
	// clusters.
	Workers int
	// KubeProxy keeps kube-proxy (iptables); by default it is left out because Cilium runs
	// with kubeProxyReplacement (see datapath.CiliumOptions).
	KubeProxy bool
	// CgroupV1 says Docker runs containers on cgroup v1 (or a hybrid hierarchy): kubelet 1.35
	// and later then refuse to start unless told to accept it (failCgroupV1: false), which a
	// KubeletConfiguration patch in the kind config does.
	CgroupV1 bool
	// RegistryHosts makes the nodes' containerd read registry hosts from RegistryHostsDir, so
	// that TrustRegistry can point them at the run's registry (the registry add-on).
	RegistryHosts bool
	// Runner runs the docker CLI (stop, start, save) and prints the plan in a dry run;
	// default execx.Exec.
	Runner execx.Runner
}

// Provider creates kind clusters.
type Provider struct {
	opts provider.Options
	o    Options
	kind *kindcluster.Provider
	log  io.Writer
}

var _ provider.Provider = (*Provider)(nil)

// New returns a kind provider keeping kubeconfigs under opts.Dir.
func New(opts provider.Options, o Options) *Provider {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if o.NodeImage == "" {
		o.NodeImage = NodeImage
	}
	if o.Runner == nil {
		o.Runner = execx.Exec{Log: opts.Log}
	}
	return &Provider{
		opts: opts, o: o, log: opts.Log,
		kind: kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(logger{opts.Log})),
	}
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements provider.Provider: real pods and a real network.
func (p *Provider) Capabilities() []provider.Capability { return Capabilities }

// Capabilities are what every cluster of this provider can do, known before one exists (the
// bed registration carries them, so a scenario runner can plan without bringing anything up).
var Capabilities = []provider.Capability{provider.CapabilityCreate, provider.CapabilityStopStart, provider.CapabilityDatapath, provider.CapabilityPartition}

// Context is the kubeconfig context kind writes for a cluster.
func Context(name string) string { return "kind-" + name }

// ControlPlane is the container name (and in-network host name) of a cluster's control-plane
// node.
func ControlPlane(name string) string { return name + "-control-plane" }

// KubeconfigPath is where the provider keeps the cluster's kubeconfig.
func (p *Provider) KubeconfigPath(name string) string {
	return filepath.Join(p.opts.Dir, name, "kubeconfig")
}

// Config renders the kind cluster configuration of a topology cluster.
func Config(c topology.Cluster, o Options) (*kindv1alpha4.Cluster, error) {
	image := o.NodeImage
	if image == "" {
		image = NodeImage
	}
	var v4, v6 []string
	for _, cidr := range c.PodCIDRs {
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: pod CIDR %q: %w", c.Name, cidr, err)
		}
		if p.Addr().Is4() {
			v4 = append(v4, p.String())
		} else {
			v6 = append(v6, p.String())
		}
	}
	if len(v4) != 1 || len(v6) != 0 {
		return nil, fmt.Errorf("cluster %s: the kind provider needs exactly one IPv4 pod CIDR (got %s): kind clusters of the test bed are IPv4-only; give it one IPv4 podCIDRs entry",
			c.Name, strings.Join(c.PodCIDRs, ", "))
	}
	if c.ServiceCIDR == "" {
		return nil, fmt.Errorf("cluster %s: serviceCIDR is required with the kind provider: every cluster of a mesh needs its own", c.Name)
	}
	cfg := &kindv1alpha4.Cluster{
		TypeMeta: kindv1alpha4.TypeMeta{Kind: "Cluster", APIVersion: "kind.x-k8s.io/v1alpha4"},
		Name:     c.Name,
		Networking: kindv1alpha4.Networking{
			IPFamily:          kindv1alpha4.IPv4Family,
			PodSubnet:         v4[0],
			ServiceSubnet:     c.ServiceCIDR,
			DisableDefaultCNI: true,
			KubeProxyMode:     KubeProxyNone,
		},
		Nodes: []kindv1alpha4.Node{{Role: kindv1alpha4.ControlPlaneRole, Image: image}},
	}
	if o.KubeProxy {
		cfg.Networking.KubeProxyMode = kindv1alpha4.IPTablesProxyMode
	}
	if o.CgroupV1 {
		cfg.KubeadmConfigPatches = append(cfg.KubeadmConfigPatches, KubeletCgroupV1Patch)
	}
	if o.RegistryHosts {
		cfg.ContainerdConfigPatches = append(cfg.ContainerdConfigPatches, ContainerdRegistryPatch)
	}
	for range o.Workers {
		cfg.Nodes = append(cfg.Nodes, kindv1alpha4.Node{Role: kindv1alpha4.WorkerRole, Image: image})
	}
	return cfg, nil
}

// KubeletCgroupV1Patch lets kubelet run on a cgroup v1 host (KEP-5573: from 1.35 kubelet fails
// on cgroup v1 unless failCgroupV1 is false).
const KubeletCgroupV1Patch = `kind: KubeletConfiguration
apiVersion: kubelet.config.k8s.io/v1beta1
failCgroupV1: false
`

// MarshalConfig writes a kind configuration as YAML, as `kind create cluster --config` reads it.
func MarshalConfig(cfg *kindv1alpha4.Cluster) ([]byte, error) { return yaml.Marshal(cfg) }

// Create implements provider.Provider: it creates the kind cluster (unless it exists) and
// waits for its API server. The nodes stay NotReady until a CNI (Cilium) is installed.
func (p *Provider) Create(ctx context.Context, c topology.Cluster) (*provider.Cluster, error) {
	cfg, err := Config(c, p.o)
	if err != nil {
		return nil, err
	}
	data, err := MarshalConfig(cfg)
	if err != nil {
		return nil, err
	}
	out := &provider.Cluster{Name: c.Name, Kubeconfig: p.KubeconfigPath(c.Name), Context: Context(c.Name)}
	if !p.o.Runner.Note("create kind cluster %s with sigs.k8s.io/kind/pkg/cluster, kubeconfig %s, config:\n%s", c.Name, out.Kubeconfig, data) {
		return out, nil
	}
	exists, err := p.exists(c.Name)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := os.MkdirAll(filepath.Dir(out.Kubeconfig), 0o755); err != nil {
			return nil, err
		}
		err := p.createOnNetwork(c.Name, func() error {
			return p.kind.Create(c.Name,
				kindcluster.CreateWithV1Alpha4Config(cfg),
				kindcluster.CreateWithKubeconfigPath(out.Kubeconfig),
				kindcluster.CreateWithDisplayUsage(false),
				kindcluster.CreateWithDisplaySalutation(false),
			)
		})
		if err != nil {
			return nil, fmt.Errorf("create kind cluster %s: %w (is Docker running? `polykube-testbed up --dry-run` shows the config)", c.Name, err)
		}
	} else if err := p.writeKubeconfig(c.Name); err != nil {
		return nil, err
	}
	if p.isolated() {
		if err := p.JoinInternet(ctx, c.Name); err != nil {
			return nil, err
		}
	}
	rc, err := out.RESTConfig()
	if err != nil {
		return nil, err
	}
	if err := provider.WaitReady(ctx, rc, p.opts.Topology.Wait(topology.WaitClusterReady), c.Name); err != nil {
		return nil, err
	}
	return out, nil
}

func (p *Provider) exists(name string) (bool, error) {
	names, err := p.kind.List()
	if err != nil {
		return false, fmt.Errorf("list kind clusters: %w", err)
	}
	return slices.Contains(names, name), nil
}

func (p *Provider) writeKubeconfig(name string) error {
	path := p.KubeconfigPath(name)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	if err := p.kind.ExportKubeConfig(name, path, false); err != nil {
		return fmt.Errorf("export the kubeconfig of kind cluster %s: %w", name, err)
	}
	return nil
}

// Delete implements provider.Provider.
func (p *Provider) Delete(_ context.Context, name string) error {
	if !p.o.Runner.Note("delete kind cluster %s", name) {
		return nil
	}
	if err := p.kind.Delete(name, p.KubeconfigPath(name)); err != nil {
		return fmt.Errorf("delete kind cluster %s: %w", name, err)
	}
	p.deleteNetworks(context.Background(), name)
	return os.RemoveAll(filepath.Join(p.opts.Dir, name))
}

// NodeNames lists the node containers of a cluster.
func (p *Provider) NodeNames(name string) ([]string, error) {
	if p.o.Runner.DryRun() {
		names := []string{ControlPlane(name)}
		for i := range p.o.Workers {
			names = append(names, workerName(name, i))
		}
		return names, nil
	}
	ns, err := p.listNodes(name)
	if err != nil {
		return nil, err
	}
	out := make([]string, len(ns))
	for i, n := range ns {
		out[i] = n.String()
	}
	slices.Sort(out)
	return out, nil
}

// listNodes lists a cluster's nodes, failing when it has none.
func (p *Provider) listNodes(name string) ([]nodes.Node, error) {
	ns, err := p.kind.ListNodes(name)
	if err != nil {
		return nil, fmt.Errorf("list the nodes of kind cluster %s: %w", name, err)
	}
	if len(ns) == 0 {
		return nil, fmt.Errorf("kind cluster %s has no nodes: create it first (polykube-testbed up --provider kind)", name)
	}
	return ns, nil
}

func workerName(cluster string, i int) string {
	if i == 0 {
		return cluster + "-worker"
	}
	return fmt.Sprintf("%s-worker%d", cluster, i+1)
}

// Stop implements provider.Provider: it stops every node container (keeping its state) and
// waits until the API server no longer answers.
func (p *Provider) Stop(ctx context.Context, name string) error {
	names, err := p.NodeNames(name)
	if err != nil {
		return err
	}
	if _, err := p.o.Runner.Run(ctx, execx.Command("docker", append([]string{"stop"}, names...)...)); err != nil {
		return fmt.Errorf("stop kind cluster %s: %w", name, err)
	}
	if p.o.Runner.DryRun() {
		return nil
	}
	rc, err := provider.RESTConfig(p.KubeconfigPath(name), Context(name))
	if err != nil {
		return err
	}
	return provider.WaitUnreachable(ctx, rc, p.opts.Topology.Wait(topology.WaitClusterStopped), name)
}

// Start implements provider.Provider: it starts the node containers and waits for the API
// server. Docker may give a restarted node another address on the kind network; the
// kubeconfig (a published port on 127.0.0.1) is rewritten, and docs/datapath.md says what
// that means for ClusterMesh.
func (p *Provider) Start(ctx context.Context, name string) error {
	names, err := p.NodeNames(name)
	if err != nil {
		return err
	}
	if _, err := p.o.Runner.Run(ctx, execx.Command("docker", append([]string{"start"}, names...)...)); err != nil {
		return fmt.Errorf("start kind cluster %s: %w", name, err)
	}
	if p.o.Runner.DryRun() {
		return nil
	}
	if err := p.writeKubeconfig(name); err != nil {
		return err
	}
	// On an isolated topology the firewall and the overlay live in the node's network
	// namespace, which the restart renewed: without them the cluster would be back but cut off
	// from its peers.
	if p.isolated() && p.opts.Topology.Overlay == topology.OverlayWireGuard {
		if err := p.JoinInternet(ctx, name); err != nil {
			return fmt.Errorf("cluster %s restarted: %w", name, err)
		}
		if err := p.restoreOverlay(ctx, name); err != nil {
			return fmt.Errorf("cluster %s restarted, bring its overlay back: %w", name, err)
		}
	}
	rc, err := provider.RESTConfig(p.KubeconfigPath(name), Context(name))
	if err != nil {
		return err
	}
	return provider.WaitReady(ctx, rc, p.opts.Topology.Wait(topology.WaitClusterReady), name)
}

// Kubeconfig implements provider.Provider.
func (p *Provider) Kubeconfig(_ context.Context, name string) (*provider.Cluster, error) {
	c := &provider.Cluster{Name: name, Kubeconfig: p.KubeconfigPath(name), Context: Context(name)}
	if p.o.Runner.DryRun() {
		return c, nil
	}
	if _, err := os.Stat(c.Kubeconfig); errors.Is(err, os.ErrNotExist) {
		exists, err := p.exists(name)
		if err != nil {
			return nil, err
		}
		if !exists {
			return nil, fmt.Errorf("kind cluster %s does not exist: create it with `polykube-testbed up --provider kind`", name)
		}
		if err := p.writeKubeconfig(name); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// List implements provider.Provider: the topology's clusters that exist in kind.
func (p *Provider) List(context.Context) ([]string, error) {
	all, err := p.kind.List()
	if err != nil {
		return nil, fmt.Errorf("list kind clusters: %w", err)
	}
	var out []string
	for _, name := range p.opts.Topology.ClusterNames() {
		if slices.Contains(all, name) {
			out = append(out, name)
		}
	}
	return out, nil
}

// LoadImageArchive loads an image archive (`docker save` output) into every node of the
// cluster with kind's nodeutils.LoadImageArchive, as `kind load image-archive` does.
func (p *Provider) LoadImageArchive(_ context.Context, name, archive string) error {
	if !p.o.Runner.Note("load image archive %s into every node of kind cluster %s (kind nodeutils.LoadImageArchive)", archive, name) {
		return nil
	}
	ns, err := p.kind.ListNodes(name)
	if err != nil {
		return fmt.Errorf("list the nodes of kind cluster %s: %w", name, err)
	}
	for _, n := range ns {
		if err := loadInto(n, archive); err != nil {
			return fmt.Errorf("load %s into node %s: %w", archive, n.String(), err)
		}
	}
	return nil
}

func loadInto(n nodes.Node, archive string) error {
	f, err := os.Open(archive)
	if err != nil {
		return err
	}
	defer f.Close()
	return nodeutils.LoadImageArchive(n, f)
}

// CollectLogs exports the logs of every node of the cluster into dir (kind export logs).
func (p *Provider) CollectLogs(name, dir string) error {
	if !p.o.Runner.Note("export the logs of kind cluster %s into %s", name, dir) {
		return nil
	}
	return p.kind.CollectLogs(name, dir)
}

// logger adapts kind's logger to the test bed's log writer: warnings, errors and V(0) status.
type logger struct{ w io.Writer }

func (l logger) Warn(m string)                        { fmt.Fprintln(l.w, "  kind: WARNING:", m) }
func (l logger) Warnf(f string, a ...any)             { l.Warn(fmt.Sprintf(f, a...)) }
func (l logger) Error(m string)                       { fmt.Fprintln(l.w, "  kind: ERROR:", m) }
func (l logger) Errorf(f string, a ...any)            { l.Error(fmt.Sprintf(f, a...)) }
func (l logger) V(v kindlog.Level) kindlog.InfoLogger { return infoLogger{l.w, v == 0} }

type infoLogger struct {
	w  io.Writer
	on bool
}

func (i infoLogger) Info(m string) {
	if i.on {
		fmt.Fprintln(i.w, "  kind:", strings.TrimSpace(m))
	}
}
func (i infoLogger) Infof(f string, a ...any) { i.Info(fmt.Sprintf(f, a...)) }
func (i infoLogger) Enabled() bool            { return i.on }

// APIServerEndpoint is the API server as the cluster's nodes reach it without kube-proxy:
// the control-plane container on the kind network (Cilium's k8sServiceHost and
// k8sServicePort).
func (p *Provider) APIServerEndpoint(name string) (string, int) {
	return ControlPlane(name), APIServerPort
}

// NodeAddresses are the IPv4 addresses of a cluster's control-plane container on the kind
// network: where the other clusters' Cilium agents reach its clustermesh-apiserver NodePort.
// Docker may give a restarted container another address, so ask again after a Start. On an
// isolated topology it is the cluster's overlay address, the one address of it the other
// clusters reach (through the WireGuard overlay), which a restart does not change.
func (p *Provider) NodeAddresses(ctx context.Context, name string) ([]string, error) {
	if p.isolated() {
		a, err := p.overlayAddress(name)
		if err != nil {
			return nil, err
		}
		return []string{a.String()}, nil
	}
	network := ClusterNetwork(p.opts.Topology, name)
	out, err := p.o.Runner.Run(ctx, execx.Command("docker", "inspect", "--format",
		fmt.Sprintf(`{{with index .NetworkSettings.Networks %q}}{{.IPAddress}}{{end}}`, network), ControlPlane(name)))
	if err != nil {
		return nil, fmt.Errorf("find the address of %s on the %s network: %w", ControlPlane(name), network, err)
	}
	ip := strings.TrimSpace(string(out))
	if p.o.Runner.DryRun() && ip == "" {
		ip = "<" + ControlPlane(name) + " address>"
	}
	if ip == "" {
		return nil, fmt.Errorf("%s has no address on the %s network (is it running? docker start %s)", ControlPlane(name), network, ControlPlane(name))
	}
	return []string{ip}, nil
}

// DockerNetwork is the Docker network kind puts every node on; in an isolated topology, the
// first cluster's own network (the Git server listens on its gateway, an address of this host
// which the other clusters' nodes reach through their own gateways as the host's).
func (p *Provider) DockerNetwork() string {
	if p.isolated() && len(p.opts.Topology.Clusters) > 0 {
		return ClusterNetwork(p.opts.Topology, p.opts.Topology.Clusters[0].Name)
	}
	return "kind"
}
