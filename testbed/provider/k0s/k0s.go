// Package k0s is a datapath test-bed provider for k0s clusters, in one of two modes:
//
//   - docker (the local example): each cluster is one k0s container (controller and worker)
//     on a shared Docker network, started with `docker run`;
//   - ssh: each cluster is installed on real hosts by the k0sctl CLI from a rendered k0sctl
//     configuration.
//
// Either way k0s installs no CNI (network.provider custom) and no kube-proxy, so Cilium is
// the CNI and replaces kube-proxy, with the topology's pod and service CIDRs. k0sctl, k0s and
// docker are external programs run through execx: the k0sctl and k0s Go modules are not
// used (the project's module proxy refuses them).
package k0s

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Name is the provider's name in a topology.
const Name = topology.ProviderK0s

// Modes of the provider.
const (
	ModeDocker = "docker"
	ModeSSH    = "ssh"
)

// Network is the Docker network the k0s containers share (docker mode).
const Network = "polykube-k0s"

// APIServerPort is the k0s API server's port.
const APIServerPort = 6443

// ClusterLabel marks the test bed's k0s containers with their cluster's name.
const ClusterLabel = "io.polykube.testbed.k0s-cluster"

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
	// Runner runs docker, k0sctl, ssh and scp; default execx.Exec.
	Runner execx.Runner
}

// Provider creates k0s clusters.
type Provider struct {
	opts provider.Options
	o    Options
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
	switch o.Mode {
	case ModeDocker:
	case ModeSSH:
		if o.Hosts == nil {
			return nil, errors.New("k0s provider: ssh mode needs a hosts file listing each cluster's hosts (see examples/local-multicluster/k0s.md)")
		}
	default:
		return nil, fmt.Errorf("k0s provider: unknown mode %q; use %s or %s", o.Mode, ModeDocker, ModeSSH)
	}
	return &Provider{opts: opts, o: o}, nil
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

// ContainerName is the k0s container of a cluster (docker mode); it is also its host name on
// the Docker network.
func ContainerName(name string) string { return "k0s-" + name }

// Image is the k0s image of a k0s version (the image tag writes '+' as '-').
func Image(k0sVersion string) string {
	return "docker.io/k0sproject/k0s:" + strings.ReplaceAll(k0sVersion, "+", "-")
}

func (p *Provider) dir(name string) string { return filepath.Join(p.opts.Dir, name) }

// KubeconfigPath is where the provider keeps the cluster's kubeconfig.
func (p *Provider) KubeconfigPath(name string) string {
	return filepath.Join(p.dir(name), "kubeconfig")
}

// APIServerEndpoint is the API server as the cluster's own nodes reach it without kube-proxy
// (Cilium's k8sServiceHost and k8sServicePort).
func (p *Provider) APIServerEndpoint(name string) (string, int) {
	if p.o.Mode == ModeSSH {
		return Controller(p.o.Hosts.Clusters[name]).Address, APIServerPort
	}
	return ContainerName(name), APIServerPort
}

// DockerNetwork is the Docker network of the nodes (docker mode), empty in ssh mode.
func (p *Provider) DockerNetwork() string {
	if p.o.Mode == ModeSSH {
		return ""
	}
	return Network
}

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

// DockerRunArgs are the arguments of `docker run` for a cluster's k0s container.
func DockerRunArgs(name, configPath, k0sVersion string) []string {
	return []string{"run", "--detach",
		"--name", ContainerName(name), "--hostname", ContainerName(name),
		"--network", Network,
		"--label", ClusterLabel + "=" + name,
		// A cgroup namespace of its own: with --cgroupns=host and the host's cgroup root
		// mounted in, three clusters' kubelets would manage the same cgroup tree.
		"--privileged", "--cgroupns=private",
		"--volume", "/lib/modules:/lib/modules:ro",
		"--volume", "/var/lib/k0s",
		"--volume", configPath + ":/etc/k0s/k0s.yaml:ro",
		"--publish", "127.0.0.1::" + strconv.Itoa(APIServerPort),
		// The image's entry point tells the role from its command line when the command is
		// k0s; here the command is a shell, so the role is given.
		"--env", "K0S_ENTRYPOINT_ROLE=controller+worker",
		Image(k0sVersion),
		// Mounts made by the kubelet (volumes, Cilium's BPF file system) must propagate to the
		// containers it starts: a container's root is private unless made shared first.
		"sh", "-c", "mount --make-rshared / && exec k0s controller --enable-worker --no-taints --config /etc/k0s/k0s.yaml",
	}
}

// Create implements provider.Provider.
func (p *Provider) Create(ctx context.Context, c topology.Cluster) (*provider.Cluster, error) {
	out := &provider.Cluster{Name: c.Name, Kubeconfig: p.KubeconfigPath(c.Name), Context: Context(c.Name)}
	var err error
	if p.o.Mode == ModeSSH {
		err = p.createSSH(ctx, c)
	} else {
		err = p.createDocker(ctx, c)
	}
	if err != nil || p.o.Runner.DryRun() {
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

func (p *Provider) createDocker(ctx context.Context, c topology.Cluster) error {
	cfg, err := K0sConfig(c, p.o.KubeProxy, []string{"127.0.0.1", "localhost", ContainerName(c.Name)})
	if err != nil {
		return err
	}
	data, err := Marshal(cfg)
	if err != nil {
		return err
	}
	configPath := filepath.Join(p.dir(c.Name), "k0s.yaml")
	if err := p.writeFile(configPath, data); err != nil {
		return err
	}
	if out, err := p.run(ctx, "docker", "network", "create", Network); err != nil && !strings.Contains(string(out), "already exists") {
		return fmt.Errorf("create the Docker network %s: %w", Network, err)
	}
	exists, err := p.containerExists(ctx, c.Name)
	if err != nil {
		return err
	}
	if !exists {
		if _, err := p.run(ctx, "docker", DockerRunArgs(c.Name, configPath, p.o.K0sVersion)...); err != nil {
			return fmt.Errorf("start the k0s container of %s: %w", c.Name, err)
		}
	}
	return p.writeDockerKubeconfig(ctx, c.Name)
}

func (p *Provider) containerExists(ctx context.Context, name string) (bool, error) {
	out, err := p.run(ctx, "docker", "ps", "--all", "--quiet", "--filter", "label="+ClusterLabel+"="+name)
	if err != nil {
		return false, fmt.Errorf("look for the k0s container of %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)) != "", nil
}

// writeDockerKubeconfig waits for k0s to hand out an admin kubeconfig and rewrites it to the
// API server's published port on 127.0.0.1.
func (p *Provider) writeDockerKubeconfig(ctx context.Context, name string) error {
	var raw []byte
	w := p.opts.Topology.Wait(topology.WaitClusterReady)
	err := wait.For(ctx, w, "k0s in "+ContainerName(name)+" to hand out an admin kubeconfig", func(ctx context.Context) error {
		out, err := p.run(ctx, "docker", "exec", ContainerName(name), "k0s", "kubeconfig", "admin")
		raw = out
		return err
	})
	if err != nil {
		return err
	}
	port, err := p.run(ctx, "docker", "port", ContainerName(name), strconv.Itoa(APIServerPort)+"/tcp")
	if err != nil {
		return fmt.Errorf("find the published API server port of %s: %w", ContainerName(name), err)
	}
	addr, _, _ := strings.Cut(strings.TrimSpace(string(port)), "\n")
	return p.saveKubeconfig(name, raw, "https://"+addr)
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

func (p *Provider) createSSH(ctx context.Context, c topology.Cluster) error {
	cfg, err := K0sctlConfig(c, p.o.Hosts.Clusters[c.Name], p.o.K0sVersion, p.o.KubeProxy)
	if err != nil {
		return err
	}
	data, err := Marshal(cfg)
	if err != nil {
		return err
	}
	path := p.k0sctlPath(c.Name)
	if err := p.writeFile(path, data); err != nil {
		return err
	}
	if _, err := p.run(ctx, "k0sctl", "apply", "--config", path); err != nil {
		return fmt.Errorf("k0sctl apply for %s: %w", c.Name, err)
	}
	raw, err := p.run(ctx, "k0sctl", "kubeconfig", "--config", path)
	if err != nil {
		return fmt.Errorf("k0sctl kubeconfig for %s: %w", c.Name, err)
	}
	return p.saveKubeconfig(c.Name, raw, "")
}

func (p *Provider) k0sctlPath(name string) string { return filepath.Join(p.dir(name), "k0sctl.yaml") }

// Delete implements provider.Provider.
func (p *Provider) Delete(ctx context.Context, name string) error {
	if p.o.Mode == ModeSSH {
		if _, err := p.run(ctx, "k0sctl", "reset", "--config", p.k0sctlPath(name), "--force"); err != nil {
			return fmt.Errorf("k0sctl reset for %s: %w", name, err)
		}
	} else if out, err := p.run(ctx, "docker", "rm", "--force", "--volumes", ContainerName(name)); err != nil && !strings.Contains(string(out), "No such container") {
		return fmt.Errorf("remove the k0s container of %s: %w", name, err)
	}
	if !p.o.Runner.Note("remove %s", p.dir(name)) {
		return nil
	}
	return os.RemoveAll(p.dir(name))
}

// sshArgs are the ssh (or scp) options that reach a host.
func sshArgs(h SSHHost, portFlag string) []string {
	var args []string
	if h.KeyPath != "" {
		args = append(args, "-i", h.KeyPath)
	}
	if h.Port != 0 && h.Port != 22 {
		args = append(args, portFlag, strconv.Itoa(h.Port))
	}
	return args
}

func sshTarget(h SSHHost) string {
	user := h.User
	if user == "" {
		user = "root"
	}
	return user + "@" + h.Address
}

// onHosts runs a k0s command as root on every host of a cluster.
func (p *Provider) onHosts(ctx context.Context, name string, k0sArgs ...string) error {
	for _, h := range p.o.Hosts.Clusters[name] {
		args := append(sshArgs(h, "-p"), sshTarget(h), "sudo", "k0s")
		if _, err := p.run(ctx, "ssh", append(args, k0sArgs...)...); err != nil {
			return fmt.Errorf("k0s %s on %s: %w", strings.Join(k0sArgs, " "), h.Address, err)
		}
	}
	return nil
}

// Stop implements provider.Provider.
func (p *Provider) Stop(ctx context.Context, name string) error {
	var err error
	if p.o.Mode == ModeSSH {
		err = p.onHosts(ctx, name, "stop")
	} else {
		_, err = p.run(ctx, "docker", "stop", ContainerName(name))
	}
	if err != nil {
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
	if p.o.Mode == ModeSSH {
		if err := p.onHosts(ctx, name, "start"); err != nil {
			return err
		}
	} else {
		if _, err := p.run(ctx, "docker", "start", ContainerName(name)); err != nil {
			return fmt.Errorf("start k0s cluster %s: %w", name, err)
		}
		// Docker publishes the API server on a new host port after a restart.
		if err := p.writeDockerKubeconfig(ctx, name); err != nil {
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
		var exists bool
		if p.o.Mode == ModeSSH {
			_, err := os.Stat(p.k0sctlPath(name))
			exists = err == nil
		} else {
			var err error
			if exists, err = p.containerExists(ctx, name); err != nil {
				return nil, err
			}
		}
		if exists {
			out = append(out, name)
		}
	}
	slices.Sort(out)
	return out, nil
}

// LoadImageArchive imports an image archive into the containerd of every node of the cluster
// (k0s ctr, namespace k8s.io).
func (p *Provider) LoadImageArchive(ctx context.Context, name, archive string) error {
	const remote = "/tmp/polykube-images.tar"
	if p.o.Mode == ModeDocker {
		if _, err := p.run(ctx, "docker", "cp", archive, ContainerName(name)+":"+remote); err != nil {
			return fmt.Errorf("copy %s into %s: %w", archive, ContainerName(name), err)
		}
		if _, err := p.run(ctx, "docker", "exec", ContainerName(name), "k0s", "ctr", "--namespace", "k8s.io", "images", "import", remote); err != nil {
			return fmt.Errorf("import %s in %s: %w", archive, ContainerName(name), err)
		}
		return nil
	}
	// Only hosts that run a kubelet run pods; a controller-only host has no containerd of
	// its own (k0s ctr would fail there).
	for _, h := range p.kubeletHosts(name) {
		args := append(sshArgs(h, "-P"), archive, sshTarget(h)+":"+remote)
		if _, err := p.run(ctx, "scp", args...); err != nil {
			return fmt.Errorf("copy %s to %s: %w", archive, h.Address, err)
		}
		ssh := append(sshArgs(h, "-p"), sshTarget(h), "sudo", "k0s", "ctr", "--namespace", "k8s.io", "images", "import", remote)
		if _, err := p.run(ctx, "ssh", ssh...); err != nil {
			return fmt.Errorf("import %s on %s: %w", archive, h.Address, err)
		}
	}
	return nil
}

// kubeletHosts are the hosts of a cluster with the worker or controller+worker role.
func (p *Provider) kubeletHosts(name string) []SSHHost {
	hosts := p.o.Hosts.Clusters[name]
	var out []SSHHost
	for i, h := range hosts {
		if r := hostRole(hosts, i); r == RoleWorker || r == RoleControllerWorker {
			out = append(out, h)
		}
	}
	return out
}
