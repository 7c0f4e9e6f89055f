package incluster

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/regserver"
	"github.com/polykube/polykube/testbed/topology"
)

// With the registry add-on the in-cluster bed runs the run's OCI registry (distribution's, from
// the toolchain) as a process of this machine on the gateway of the nodes' Docker network, points
// every node's containerd at it (a hosts.toml: plain HTTP, pull and resolve), and pushes the
// Polykube image there instead of loading it into the nodes. The operator and the echo
// Workloads then name the image in the registry by digest, and each node's kubelet pulls it from
// there, as a user's fleet pulls a release.

const registryProc = "registry"

// registryRepo is the repository the Polykube image is pushed to in the run's registry.
const registryRepo = "polykube/polykube"

// registryTruster is a provider that can point its nodes' containerd at a plain-HTTP registry
// and list what containerd holds (kind).
type registryTruster interface {
	TrustRegistry(ctx context.Context, cluster, host, addr string) error
	NodeImages(ctx context.Context, cluster, prefix string) (map[string][]string, error)
}

// usesRegistry says whether the run serves the Polykube image from its registry.
func (b *Bed) usesRegistry() bool { return b.state.Topology.HasAddon(topology.AddonRegistry) }

// image is the Polykube image the clusters run: in the run's registry, by digest, once pushed
// there; else the image loaded into every node.
func (b *Bed) image() string { return b.env.PolykubeImage() }

// registryHost is the address the registry listens on: the topology's, unless it is a loopback
// address (each node's loopback is its own), else the gateway of the nodes' Docker network.
func (b *Bed) registryHost(ctx context.Context) (string, error) {
	if a := b.state.Topology.Registry.Address; a != "" && !isLoopback(a) {
		return a, nil
	}
	return b.gateway(ctx)
}

func isLoopback(a string) bool {
	ip := net.ParseIP(a)
	return ip != nil && ip.IsLoopback()
}

// Registry is the host:port of the run's registry (plain HTTP): on the gateway of the nodes'
// Docker network, the address every node's containerd was pointed at (upRegistry), so an image
// pushed there by name of this address is one the clusters' kubelets pull, and one this
// machine reaches too. An error for a run without the registry add-on, or before it started.
func (b *Bed) Registry() (string, error) {
	if !b.usesRegistry() {
		return "", fmt.Errorf("the run has no registry: add the %s add-on to the topology (topology-kind.yaml and topology-k0s.yaml have it; provider %s must be able to point its nodes' containerd at it)", topology.AddonRegistry, b.prov.Name())
	}
	if b.state.RegistryAddr == "" {
		return "", fmt.Errorf("the run's registry has not started: bring the run up first (polykube-testbed up --provider %s)", b.prov.Name())
	}
	return b.state.RegistryAddr, nil
}

// The in-cluster bed can run the registry add-on.
var _ testbed.RegistryAddon = (*Bed)(nil)

// upRegistry starts the registry, points every node's containerd at it and pushes the Polykube
// image to it.
func (b *Bed) upRegistry(ctx context.Context) error {
	t, ok := b.prov.(registryTruster)
	if !ok {
		return fmt.Errorf("provider %s cannot point its nodes' containerd at a registry (%w): remove the %s add-on from the topology (its nodes then get the Polykube image loaded)", b.prov.Name(), provider.ErrNotSupported, topology.AddonRegistry)
	}
	host, err := b.registryHost(ctx)
	if err != nil {
		return err
	}
	addr := b.state.RegistryAddr
	if addr == "" {
		addr = host + ":<port>"
	}
	if b.env.Runner.Note("start the registry (toolchain %s) on %s, its storage in %s", toolchain.Registry, addr, filepath.Join(b.opts.Dir, "registry")) {
		tc, err := toolchain.New(toolchain.Options{Build: true, Log: b.opts.Log})
		if err != nil {
			return err
		}
		bin, err := tc.Resolve(ctx, toolchain.Registry)
		if err != nil {
			return err
		}
		var port int
		if b.state.RegistryAddr != "" {
			if _, p, err := net.SplitHostPort(b.state.RegistryAddr); err == nil {
				fmt.Sscan(p, &port)
			}
		}
		srv, err := regserver.Start(ctx, regserver.Options{
			Name: registryProc, Binary: bin.Path, Procs: b.procs, DataDir: filepath.Join(b.opts.Dir, "registry"),
			Host: host, Port: port, Ready: b.env.Topology.Wait(topology.WaitProcess),
		})
		if err != nil {
			return err
		}
		addr = srv.Addr
		b.state.RegistryAddr = addr
		if err := b.saveState(); err != nil {
			return err
		}
	}
	hosts := append([]string{addr}, b.state.Topology.Registry.Mirrors...)
	if err := b.env.EachMember(func(m datapath.Member) error {
		for _, h := range hosts {
			if err := t.TrustRegistry(ctx, m.Name, h, addr); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return err
	}
	return b.pushImage(ctx, addr)
}

// pushImage pushes the Polykube image from Docker to the registry and records it by digest.
func (b *Bed) pushImage(ctx context.Context, addr string) error {
	repo := addr + "/" + registryRepo
	archive := filepath.Join(b.opts.Dir, "polykube-push.tar")
	if _, err := b.env.Runner.Run(ctx, execx.Command("docker", "save", "--output", archive, datapath.Image)); err != nil {
		return fmt.Errorf("save %s: %w", datapath.Image, err)
	}
	if !b.env.Runner.Note("push %s to %s and name it by digest", datapath.Image, repo) {
		b.state.RegistryImage = repo + "@sha256:<digest>"
		b.env.Image = b.state.RegistryImage
		return nil
	}
	defer os.Remove(archive)
	tag, err := name.NewTag(datapath.Image)
	if err != nil {
		return err
	}
	img, err := tarball.ImageFromPath(archive, &tag)
	if err != nil {
		return fmt.Errorf("read %s from %s: %w", datapath.Image, archive, err)
	}
	dst, err := name.NewTag(repo+":e2e", name.Insecure)
	if err != nil {
		return err
	}
	if err := remote.Write(dst, img, remote.WithContext(ctx)); err != nil {
		return fmt.Errorf("push %s to %s: %w (the registry's log: %s)", datapath.Image, dst, err, b.procs.LogPath(registryProc))
	}
	d, err := img.Digest()
	if err != nil {
		return err
	}
	b.state.RegistryImage = repo + "@" + d.String()
	b.env.Image = b.state.RegistryImage
	fmt.Fprintf(b.opts.Log, "   %s is %s\n", datapath.Image, b.state.RegistryImage)
	return b.saveState()
}

// fromRegistry says whether a kubelet "Pulling" message names an image of the run's registry.
func (b *Bed) fromRegistry(msg string) bool {
	return b.state.RegistryAddr != "" && strings.Contains(msg, b.state.RegistryAddr+"/")
}

// checkPulledFromRegistry fails unless, in every cluster, the containerd of the nodes that run
// the operator holds the Polykube image under the registry's name, as the kubelet pulled it
// (crictl images): the image reached the cluster from the registry, not by a load.
func (b *Bed) checkPulledFromRegistry(ctx context.Context) error {
	t, ok := b.prov.(registryTruster)
	if !ok || !b.env.Runner.Note("list the images in every node's containerd (crictl images) and fail unless a node of each cluster holds %s", b.image()) {
		return nil
	}
	repo, _, _ := strings.Cut(b.image(), "@")
	return b.env.EachMember(func(m datapath.Member) error {
		byNode, err := t.NodeImages(ctx, m.Name, repo)
		if err != nil {
			return err
		}
		var holding []string
		for n, refs := range byNode {
			if slices.Contains(refs, b.image()) {
				holding = append(holding, n)
			}
		}
		if len(holding) == 0 {
			return fmt.Errorf("no node of %s holds %s in its containerd (crictl images lists %v): its kubelet did not pull the Polykube image from the registry", m.Name, b.image(), byNode)
		}
		slices.Sort(holding)
		fmt.Fprintf(b.opts.Log, "   %s: %s pulled by %s\n", m.Name, b.image(), strings.Join(holding, ", "))
		return nil
	})
}
