// Package k0s is a datapath test-bed provider for k0s clusters, on one of two backends:
//
//   - docker (the local example): each cluster is one k0s container (controller and worker)
//     on a shared Docker network, started with `docker run`;
//   - ssh: each cluster is installed on real hosts by the k0sctl CLI from a rendered k0sctl
//     configuration.
//
// The provider does what is the same on both (the kubeconfig, the waits for a cluster to be
// ready or unreachable, the list of clusters) and leaves what differs to its backend. Either
// way k0s installs no CNI (network.provider custom), so Cilium is the CNI, with the
// topology's pod and service CIDRs, and replaces kube-proxy where the host allows it. k0sctl,
// k0s and docker are external programs run through execx: the k0sctl and k0s Go modules are
// not used (the project's module proxy refuses them).
package k0s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// Name is the provider's name in a topology.
const Name = topology.ProviderK0s

// Modes of the provider: its backends.
const (
	ModeDocker = "docker"
	ModeSSH    = "ssh"
)

// APIServerPort is the k0s API server's port.
const APIServerPort = 6443

// APIServerHostPortBase is where the host ports that publish the API servers of k0s in Docker
// start: 127.0.0.1:<base + cluster ID>, or the next free one up, below the ephemeral range.
const APIServerHostPortBase = 26443

// Options are the k0s provider's own settings.
type Options struct {
	// Mode is docker (default) or ssh.
	Mode string
	// Hosts are the SSH hosts of every cluster (ssh mode).
	Hosts *HostsFile
	// K0sVersion is the k0s release (default datapath.K0sVersion).
	K0sVersion string
	// KubeProxy keeps kube-proxy; by default Cilium replaces it.
	KubeProxy bool
	// NodeImage is the image of the k0s containers (docker mode; default Image(K0sVersion)).
	NodeImage string
	// PodImages name the images of the pods k0s runs; nil keeps k0s's own (images: upstream).
	PodImages *PodImages
	// CgroupV1 says Docker runs containers on cgroup v1 (docker mode): kubelet is told to
	// accept it (NodeProfile).
	CgroupV1 bool
	// Runner runs docker, k0sctl, ssh and scp; default execx.Exec.
	Runner execx.Runner
}

// backend is where a provider's k0s clusters run: what differs between k0s in Docker
// containers and k0s on SSH hosts. Each method does only the backend's part; the provider
// waits for the cluster and keeps its kubeconfig.
type backend interface {
	// create starts k0s for the cluster (nothing if it exists) and returns its admin
	// kubeconfig.
	create(ctx context.Context, c topology.Cluster) (*adminKubeconfig, error)
	// remove removes the cluster's k0s.
	remove(ctx context.Context, name string) error
	// stop stops the cluster's k0s on every node.
	stop(ctx context.Context, name string) error
	// start starts it again and returns the admin kubeconfig as create does, or nil when
	// the one kept still holds.
	start(ctx context.Context, name string) (*adminKubeconfig, error)
	// exists says whether the cluster was created.
	exists(ctx context.Context, name string) (bool, error)
	// loadImageArchive imports an image archive into the containerd of every node that runs
	// a kubelet.
	loadImageArchive(ctx context.Context, name, archive string) error
	// writeNodeFile writes a file into every node that runs a kubelet.
	writeNodeFile(ctx context.Context, name, path string, data []byte) error
	// nodeImages lists, by node, the references of the images in the containerd of every node
	// that runs a kubelet.
	nodeImages(ctx context.Context, name string) (map[string][]string, error)
	// apiServerEndpoint is the API server as the cluster's own nodes reach it.
	apiServerEndpoint(name string) (string, int)
	// dockerNetwork is the Docker network of the nodes, "" when they are not containers.
	dockerNetwork() string
	// nodeAddresses are the addresses of the cluster's nodes the other clusters reach (its
	// ClusterMesh NodePort).
	nodeAddresses(ctx context.Context, name string) ([]string, error)
}

// NodeAddresses are the addresses of a cluster's nodes that the other clusters reach: the
// ClusterMesh peers' addresses.
func (p *Provider) NodeAddresses(ctx context.Context, name string) ([]string, error) {
	return p.b.nodeAddresses(ctx, name)
}

// adminKubeconfig is a cluster's admin kubeconfig as k0s hands it out, and the server to
// point it at ("" keeps its own).
type adminKubeconfig struct {
	raw    []byte
	server string
}

// Provider creates k0s clusters.
type Provider struct {
	opts provider.Options
	o    Options
	b    backend
}

var _ provider.Provider = (*Provider)(nil)

// New returns a k0s provider keeping its files under opts.Dir.
func New(opts provider.Options, o Options) (*Provider, error) {
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if o.Mode == "" {
		o.Mode = ModeDocker
	}
	if o.K0sVersion == "" {
		o.K0sVersion = datapath.K0sVersion
	}
	if o.Runner == nil {
		o.Runner = execx.Exec{Log: opts.Log}
	}
	if o.NodeImage == "" {
		o.NodeImage = Image(o.K0sVersion)
	}
	p := &Provider{opts: opts, o: o}
	switch o.Mode {
	case ModeDocker:
		p.b = &dockerBackend{p: p}
	case ModeSSH:
		if o.Hosts == nil {
			return nil, errors.New("k0s provider: ssh mode needs a hosts file listing each cluster's hosts (see examples/local-multicluster/k0s.md)")
		}
		p.b = &sshBackend{p: p, hosts: o.Hosts}
	default:
		return nil, fmt.Errorf("k0s provider: unknown mode %q; use %s or %s", o.Mode, ModeDocker, ModeSSH)
	}
	return p, nil
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements provider.Provider.
func (p *Provider) Capabilities() []provider.Capability { return Capabilities }

// Capabilities are what every cluster of this provider can do, known before one exists (the
// bed registration carries them, so a scenario runner can plan without bringing anything up).
var Capabilities = []provider.Capability{provider.CapabilityCreate, provider.CapabilityStopStart, provider.CapabilityDatapath}

// Context is the kubeconfig context the provider writes for a cluster.
func Context(name string) string { return "k0s-" + name }

func (p *Provider) dir(name string) string { return filepath.Join(p.opts.Dir, name) }

// KubeconfigPath is where the provider keeps the cluster's kubeconfig.
func (p *Provider) KubeconfigPath(name string) string {
	return filepath.Join(p.dir(name), "kubeconfig")
}

// APIServerEndpoint is the API server as the cluster's own nodes reach it without kube-proxy
// (Cilium's k8sServiceHost and k8sServicePort).
func (p *Provider) APIServerEndpoint(name string) (string, int) { return p.b.apiServerEndpoint(name) }

// DockerNetwork is the Docker network of the nodes (docker mode), empty in ssh mode.
func (p *Provider) DockerNetwork() string { return p.b.dockerNetwork() }

func (p *Provider) run(ctx context.Context, path string, args ...string) ([]byte, error) {
	return p.o.Runner.Run(ctx, execx.Command(path, args...))
}

// writeFile writes a file the plan shows, unless this is a dry run.
func (p *Provider) writeFile(path string, data []byte) error {
	if !p.o.Runner.Note("write %s:\n%s", path, data) {
		return nil
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Create implements provider.Provider.
func (p *Provider) Create(ctx context.Context, c topology.Cluster) (*provider.Cluster, error) {
	out := &provider.Cluster{Name: c.Name, Kubeconfig: p.KubeconfigPath(c.Name), Context: Context(c.Name)}
	kc, err := p.b.create(ctx, c)
	if err != nil {
		return out, err
	}
	if err := p.saveKubeconfig(c.Name, kc.raw, kc.server); err != nil || p.o.Runner.DryRun() {
		return out, err
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

// saveKubeconfig renames the only context of a kubeconfig to Context(name), optionally points
// it at server, and writes it.
func (p *Provider) saveKubeconfig(name string, raw []byte, server string) error {
	path := p.KubeconfigPath(name)
	if !p.o.Runner.Note("write %s: the admin kubeconfig with context %s%s", path, Context(name), map[bool]string{true: ", server " + server, false: ""}[server != ""]) {
		return nil
	}
	cfg, err := clientcmd.Load(raw)
	if err != nil {
		return fmt.Errorf("parse the kubeconfig of %s: %w", name, err)
	}
	cur := cfg.Contexts[cfg.CurrentContext]
	if cur == nil {
		return fmt.Errorf("the kubeconfig of %s has no current context", name)
	}
	cl, user := cfg.Clusters[cur.Cluster], cfg.AuthInfos[cur.AuthInfo]
	if cl == nil || user == nil {
		return fmt.Errorf("the kubeconfig of %s is incomplete (context %s)", name, cfg.CurrentContext)
	}
	if server != "" {
		cl.Server = server
	}
	ctxName := Context(name)
	out := clientcmdNew()
	out.Clusters[ctxName], out.AuthInfos[ctxName] = cl, user
	cur.Cluster, cur.AuthInfo = ctxName, ctxName
	out.Contexts[ctxName], out.CurrentContext = cur, ctxName
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return clientcmd.WriteToFile(*out, path)
}

// Delete implements provider.Provider.
func (p *Provider) Delete(ctx context.Context, name string) error {
	if err := p.b.remove(ctx, name); err != nil {
		return err
	}
	if !p.o.Runner.Note("remove %s", p.dir(name)) {
		return nil
	}
	return os.RemoveAll(p.dir(name))
}

// Stop implements provider.Provider.
func (p *Provider) Stop(ctx context.Context, name string) error {
	if err := p.b.stop(ctx, name); err != nil {
		return fmt.Errorf("stop k0s cluster %s: %w", name, err)
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

// Start implements provider.Provider.
func (p *Provider) Start(ctx context.Context, name string) error {
	kc, err := p.b.start(ctx, name)
	if err != nil {
		return err
	}
	if kc != nil {
		if err := p.saveKubeconfig(name, kc.raw, kc.server); err != nil {
			return err
		}
	}
	if p.o.Runner.DryRun() {
		return nil
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
	if _, err := os.Stat(c.Kubeconfig); err != nil {
		return nil, fmt.Errorf("k0s cluster %s has no kubeconfig at %s: create it with `polykube-testbed up --provider k0s`", name, c.Kubeconfig)
	}
	return c, nil
}

// List implements provider.Provider: the topology's clusters the provider has created.
func (p *Provider) List(ctx context.Context) ([]string, error) {
	var out []string
	for _, name := range p.opts.Topology.ClusterNames() {
		exists, err := p.b.exists(ctx, name)
		if err != nil {
			return nil, err
		}
		if exists {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// LoadImageArchive imports an image archive into the containerd of every node of the cluster
// that runs a kubelet (k0s ctr, namespace k8s.io).
func (p *Provider) LoadImageArchive(ctx context.Context, name, archive string) error {
	return p.b.loadImageArchive(ctx, name, archive)
}

// TrustRegistry writes a hosts.toml into every node of the cluster that runs a kubelet, under
// host's directory, so that it pulls images named host/... from the plain-HTTP registry at
// addr: host is addr itself, or a mirror name served by that registry. containerd reads the
// directory at every pull, so nothing restarts; the k0s node image built here names it in a
// containerd drop-in (scripts/images/k0s-node.sh). k0s's own image does not, and its nodes
// then pull over HTTPS and fail.
func (p *Provider) TrustRegistry(ctx context.Context, name, host, addr string) error {
	file := path.Join(provider.RegistryHostsDir, host, "hosts.toml")
	if !p.o.Runner.Note("write %s into every node of %s (plain HTTP to %s, pull and resolve)", file, name, addr) {
		return nil
	}
	return p.b.writeNodeFile(ctx, name, file, []byte(provider.RegistryHostsTOML(addr)))
}

// NodeImages lists, by node, the references (tags and digests) of the images in the containerd
// of every node of the cluster that start with prefix, as `k0s ctr images ls` reports them:
// what the kubelet pulled, as containerd saw it.
func (p *Provider) NodeImages(ctx context.Context, name, prefix string) (map[string][]string, error) {
	all, err := p.b.nodeImages(ctx, name)
	if err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for node, refs := range all {
		out[node] = []string{}
		for _, r := range refs {
			if strings.HasPrefix(r, prefix) {
				out[node] = append(out[node], r)
			}
		}
	}
	return out, nil
}
