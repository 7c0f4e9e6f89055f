package k0s

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Network is the Docker network the k0s containers share (docker mode).
const Network = "polykube-k0s"

// ClusterLabel marks the test bed's k0s containers with their cluster's name.
const ClusterLabel = "io.polykube.testbed.k0s-cluster"

// ContainerName is the k0s container of a cluster (docker mode); it is also its host name on
// the Docker network.
func ContainerName(name string) string { return "k0s-" + name }

// Image is the k0s image of a k0s version (the image tag writes '+' as '-').
func Image(k0sVersion string) string {
	return "docker.io/k0sproject/k0s:" + strings.ReplaceAll(k0sVersion, "+", "-")
}

// dockerBackend runs each cluster as one k0s container (controller and worker) on Network.
type dockerBackend struct {
	p *Provider
	// network serializes the creation of Network: Docker checks the name and creates the
	// network in two steps, so clusters created at once would make one network each, all of
	// that name, which `docker run --network` then refuses as ambiguous.
	network sync.Mutex
}

func (d *dockerBackend) apiServerEndpoint(name string) (string, int) {
	return ContainerName(name), APIServerPort
}

func (d *dockerBackend) dockerNetwork() string { return Network }

func (d *dockerBackend) nodeAddresses(ctx context.Context, name string) ([]string, error) {
	out, err := d.p.run(ctx, "docker", "inspect", "--format",
		fmt.Sprintf(`{{with index .NetworkSettings.Networks %q}}{{.IPAddress}}{{end}}`, Network), ContainerName(name))
	if err != nil {
		return nil, fmt.Errorf("find the address of %s on the %s network: %w", ContainerName(name), Network, err)
	}
	ip := strings.TrimSpace(string(out))
	if d.p.o.Runner.DryRun() && ip == "" {
		ip = "<" + ContainerName(name) + " address>"
	}
	if ip == "" {
		return nil, fmt.Errorf("%s has no address on the %s network (is it running? docker start %s)", ContainerName(name), Network, ContainerName(name))
	}
	return []string{ip}, nil
}

// DisabledComponents are the k0s components the test bed does not need: the konnectivity
// tunnel (every controller is a worker), metrics-server, the update prober (it asks the
// internet) and autopilot (no upgrades). With local images, their images are not there.
var DisabledComponents = []string{"autopilot", "konnectivity-server", "metrics-server", "update-prober"}

// ControllerCommand is the k0s command of a cluster's container: controller and worker in
// one, with the configuration written for it.
func ControllerCommand(cgroupV1 bool) string {
	cmd := "k0s controller --enable-worker --no-taints --config /etc/k0s/k0s.yaml --disable-components " + strings.Join(DisabledComponents, ",") +
		" --profile " + NodeProfile
	if cgroupV1 {
		// k0s's pre-flight check rejects cgroup v1 (first run here, 2026-12-07: "Rejected:
		// cgroup v1 is not supported"); kubelet runs on it with the profile, as kind's does.
		cmd += " --ignore-pre-flight-checks"
	}
	return cmd
}

// DockerRunArgs are the arguments of `docker run` for a cluster's k0s container, from a k0s
// image (k0s's own, or the node image built here). The API server is published on hostPort of
// 127.0.0.1, chosen at creation as kind does: Docker keeps a port it was given across a restart,
// where one it picked itself (hostPort 0, only in a dry run's plan) changes on every `docker
// start`, and clients holding the old address (the scenario suite's) lose the cluster.
func DockerRunArgs(name, configPath, image string, hostPort int, cgroupV1 bool) []string {
	published := "127.0.0.1::" + strconv.Itoa(APIServerPort)
	if hostPort != 0 {
		published = "127.0.0.1:" + strconv.Itoa(hostPort) + ":" + strconv.Itoa(APIServerPort)
	}
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
		"--publish", published,
		// The image's entry point tells the role from its command line when the command is
		// k0s; here the command is a shell, so the role is given.
		"--env", "K0S_ENTRYPOINT_ROLE=controller+worker",
		image,
		// Mounts made by the kubelet (volumes, Cilium's BPF file system) must propagate to the
		// containers it starts: a container's root is private unless made shared first.
		"sh", "-c", "mount --make-rshared / && exec " + ControllerCommand(cgroupV1),
	}
}

// createNetwork creates Network unless it exists, one cluster at a time.
func (d *dockerBackend) createNetwork(ctx context.Context) error {
	d.network.Lock()
	defer d.network.Unlock()
	if out, err := d.p.run(ctx, "docker", "network", "create", Network); err != nil && !strings.Contains(string(out), "already exists") {
		return fmt.Errorf("create the Docker network %s: %w", Network, err)
	}
	return nil
}

func (d *dockerBackend) create(ctx context.Context, c topology.Cluster) (*adminKubeconfig, error) {
	p := d.p
	cfg, err := K0sConfig(c, ConfigOptions{KubeProxy: p.o.KubeProxy, SANs: []string{"127.0.0.1", "localhost", ContainerName(c.Name)},
		PodImages: p.o.PodImages, NodeProfile: true, CgroupV1: p.o.CgroupV1})
	if err != nil {
		return nil, err
	}
	data, err := Marshal(cfg)
	if err != nil {
		return nil, err
	}
	configPath := filepath.Join(p.dir(c.Name), "k0s.yaml")
	if err := p.writeFile(configPath, data); err != nil {
		return nil, err
	}
	if err := d.createNetwork(ctx); err != nil {
		return nil, err
	}
	exists, err := d.exists(ctx, c.Name)
	if err != nil {
		return nil, err
	}
	if !exists {
		var hostPort int
		if !p.o.Runner.DryRun() {
			// From APIServerHostPortBase plus the cluster ID up, outside the ephemeral range.
			hostPort, err = ports.Lasting(APIServerHostPortBase + int(c.ClusterID))
			if err != nil {
				return nil, fmt.Errorf("find a port for the API server of %s: %w", c.Name, err)
			}
		}
		if _, err := p.run(ctx, "docker", DockerRunArgs(c.Name, configPath, p.o.NodeImage, hostPort, p.o.CgroupV1)...); err != nil {
			return nil, fmt.Errorf("start the k0s container of %s: %w", c.Name, err)
		}
	}
	return d.kubeconfig(ctx, c.Name)
}

func (d *dockerBackend) exists(ctx context.Context, name string) (bool, error) {
	out, err := d.p.run(ctx, "docker", "ps", "--all", "--quiet", "--filter", "label="+ClusterLabel+"="+name)
	if err != nil {
		return false, fmt.Errorf("look for the k0s container of %s: %w", name, err)
	}
	return strings.TrimSpace(string(out)) != "", nil
}

// kubeconfig waits for k0s to hand out an admin kubeconfig and returns it with the API
// server's published port on 127.0.0.1.
func (d *dockerBackend) kubeconfig(ctx context.Context, name string) (*adminKubeconfig, error) {
	p := d.p
	var raw []byte
	w := p.opts.Topology.Wait(topology.WaitClusterReady)
	err := wait.For(ctx, w, "k0s in "+ContainerName(name)+" to hand out an admin kubeconfig", func(ctx context.Context) error {
		out, err := p.run(ctx, "docker", "exec", ContainerName(name), "k0s", "kubeconfig", "admin")
		raw = out
		return err
	})
	if err != nil {
		return nil, err
	}
	port, err := p.run(ctx, "docker", "port", ContainerName(name), strconv.Itoa(APIServerPort)+"/tcp")
	if err != nil {
		return nil, fmt.Errorf("find the published API server port of %s: %w", ContainerName(name), err)
	}
	addr, _, _ := strings.Cut(strings.TrimSpace(string(port)), "\n")
	return &adminKubeconfig{raw: raw, server: "https://" + addr}, nil
}

func (d *dockerBackend) remove(ctx context.Context, name string) error {
	if out, err := d.p.run(ctx, "docker", "rm", "--force", "--volumes", ContainerName(name)); err != nil && !strings.Contains(string(out), "No such container") {
		return fmt.Errorf("remove the k0s container of %s: %w", name, err)
	}
	return nil
}

func (d *dockerBackend) stop(ctx context.Context, name string) error {
	_, err := d.p.run(ctx, "docker", "stop", ContainerName(name))
	return err
}

func (d *dockerBackend) start(ctx context.Context, name string) (*adminKubeconfig, error) {
	if _, err := d.p.run(ctx, "docker", "start", ContainerName(name)); err != nil {
		return nil, fmt.Errorf("start k0s cluster %s: %w", name, err)
	}
	// The published port is fixed at creation; the kubeconfig is read again all the same
	// (containers created by an earlier version had Docker pick it, and it moves on restart).
	return d.kubeconfig(ctx, name)
}

func (d *dockerBackend) loadImageArchive(ctx context.Context, name, archive string) error {
	const remote = "/tmp/polykube-images.tar"
	if _, err := d.p.run(ctx, "docker", "cp", archive, ContainerName(name)+":"+remote); err != nil {
		return fmt.Errorf("copy %s into %s: %w", archive, ContainerName(name), err)
	}
	if _, err := d.p.run(ctx, "docker", "exec", ContainerName(name), "k0s", "ctr", "--namespace", "k8s.io", "images", "import", remote); err != nil {
		return fmt.Errorf("import %s in %s: %w", archive, ContainerName(name), err)
	}
	return nil
}

func (d *dockerBackend) writeNodeFile(ctx context.Context, name, file string, data []byte) error {
	tmp, err := os.CreateTemp("", "polykube-k0s-node-file-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if _, err := d.p.run(ctx, "docker", "exec", ContainerName(name), "mkdir", "-p", path.Dir(file)); err != nil {
		return fmt.Errorf("make %s in %s: %w", path.Dir(file), ContainerName(name), err)
	}
	if _, err := d.p.run(ctx, "docker", "cp", tmp.Name(), ContainerName(name)+":"+file); err != nil {
		return fmt.Errorf("copy %s into %s: %w", file, ContainerName(name), err)
	}
	return nil
}

func (d *dockerBackend) nodeImages(ctx context.Context, name string) (map[string][]string, error) {
	out, err := d.p.run(ctx, "docker", "exec", ContainerName(name), "k0s", "ctr", "--namespace", "k8s.io", "images", "list", "--quiet")
	if err != nil {
		return nil, fmt.Errorf("list the images of %s: %w", ContainerName(name), err)
	}
	return map[string][]string{ContainerName(name): strings.Fields(string(out))}, nil
}
