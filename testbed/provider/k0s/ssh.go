package k0s

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// sshBackend installs each cluster on the SSH hosts of a hosts file with k0sctl.
type sshBackend struct {
	p     *Provider
	hosts *HostsFile
}

func (s *sshBackend) apiServerEndpoint(name string) (string, int) {
	return Controller(s.hosts.Clusters[name]).Address, APIServerPort
}

func (s *sshBackend) dockerNetwork() string { return "" }

func (s *sshBackend) nodeAddresses(_ context.Context, name string) ([]string, error) {
	var ips []string
	for _, h := range s.hosts.Clusters[name] {
		ips = append(ips, h.Address)
	}
	if len(ips) == 0 {
		return nil, fmt.Errorf("cluster %s has no hosts in the k0s hosts file", name)
	}
	return ips, nil
}

func (s *sshBackend) k0sctlPath(name string) string {
	return filepath.Join(s.p.dir(name), "k0sctl.yaml")
}

func (s *sshBackend) create(ctx context.Context, c topology.Cluster) (*adminKubeconfig, error) {
	p := s.p
	cfg, err := K0sctlConfig(c, s.hosts.Clusters[c.Name], p.o.K0sVersion, p.o.KubeProxy)
	if err != nil {
		return nil, err
	}
	data, err := Marshal(cfg)
	if err != nil {
		return nil, err
	}
	path := s.k0sctlPath(c.Name)
	if err := p.writeFile(path, data); err != nil {
		return nil, err
	}
	if _, err := p.run(ctx, "k0sctl", "apply", "--config", path); err != nil {
		return nil, fmt.Errorf("k0sctl apply for %s: %w", c.Name, err)
	}
	raw, err := p.run(ctx, "k0sctl", "kubeconfig", "--config", path)
	if err != nil {
		return nil, fmt.Errorf("k0sctl kubeconfig for %s: %w", c.Name, err)
	}
	return &adminKubeconfig{raw: raw}, nil
}

func (s *sshBackend) exists(_ context.Context, name string) (bool, error) {
	_, err := os.Stat(s.k0sctlPath(name))
	return err == nil, nil
}

func (s *sshBackend) remove(ctx context.Context, name string) error {
	if _, err := s.p.run(ctx, "k0sctl", "reset", "--config", s.k0sctlPath(name), "--force"); err != nil {
		return fmt.Errorf("k0sctl reset for %s: %w", name, err)
	}
	return nil
}

func (s *sshBackend) stop(ctx context.Context, name string) error {
	return s.onHosts(ctx, name, "stop")
}

func (s *sshBackend) start(ctx context.Context, name string) (*adminKubeconfig, error) {
	return nil, s.onHosts(ctx, name, "start")
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
func (s *sshBackend) onHosts(ctx context.Context, name string, k0sArgs ...string) error {
	for _, h := range s.hosts.Clusters[name] {
		args := append(sshArgs(h, "-p"), sshTarget(h), "sudo", "k0s")
		if _, err := s.p.run(ctx, "ssh", append(args, k0sArgs...)...); err != nil {
			return fmt.Errorf("k0s %s on %s: %w", strings.Join(k0sArgs, " "), h.Address, err)
		}
	}
	return nil
}

func (s *sshBackend) loadImageArchive(ctx context.Context, name, archive string) error {
	const remote = "/tmp/polykube-images.tar"
	// Only hosts that run a kubelet run pods; a controller-only host has no containerd of
	// its own (k0s ctr would fail there).
	for _, h := range s.kubeletHosts(name) {
		args := append(sshArgs(h, "-P"), archive, sshTarget(h)+":"+remote)
		if _, err := s.p.run(ctx, "scp", args...); err != nil {
			return fmt.Errorf("copy %s to %s: %w", archive, h.Address, err)
		}
		ssh := append(sshArgs(h, "-p"), sshTarget(h), "sudo", "k0s", "ctr", "--namespace", "k8s.io", "images", "import", remote)
		if _, err := s.p.run(ctx, "ssh", ssh...); err != nil {
			return fmt.Errorf("import %s on %s: %w", archive, h.Address, err)
		}
	}
	return nil
}

// kubeletHosts are the hosts of a cluster with the worker or controller+worker role.
func (s *sshBackend) kubeletHosts(name string) []SSHHost {
	hosts := s.hosts.Clusters[name]
	var out []SSHHost
	for i, h := range hosts {
		if r := hostRole(hosts, i); r == RoleWorker || r == RoleControllerWorker {
			out = append(out, h)
		}
	}
	return out
}

// The registry add-on is the in-cluster bed's on Docker; on SSH hosts the registry's address
// and containerd's hosts file are the hosts' owner's to set.
func (s *sshBackend) writeNodeFile(_ context.Context, name, file string, _ []byte) error {
	return fmt.Errorf("k0s on SSH hosts: writing %s into the hosts of %s is not done by the test bed (%w): configure their containerd for the registry yourself, or remove the registry add-on from the topology", file, name, provider.ErrNotSupported)
}

func (s *sshBackend) nodeImages(_ context.Context, name string) (map[string][]string, error) {
	return nil, fmt.Errorf("k0s on SSH hosts: listing the images of %s is not done by the test bed (%w)", name, provider.ErrNotSupported)
}
