package incluster

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// gateway is the IPv4 gateway of the nodes' Docker network: an address of this host that the
// nodes and their pods reach (127.0.0.1 is not: it is each node's own loopback).
func (b *Bed) gateway(ctx context.Context) (string, error) {
	network := b.dockerNetwork()
	if network == "" {
		return "", fmt.Errorf("the %s clusters' nodes are not Docker containers of this host: there is no Docker network gateway for them to reach this host at", b.prov.Name())
	}
	out, err := b.env.Runner.Run(ctx, execx.Command("docker", "network", "inspect", network, "--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}"))
	if err != nil {
		return "", fmt.Errorf("find the gateway of Docker network %s: %w", network, err)
	}
	var gw string
	for _, f := range strings.Fields(string(out)) {
		if a, err := netip.ParseAddr(f); err == nil && a.Is4() {
			gw = f
			break
		}
	}
	if gw == "" && b.env.Runner.DryRun() {
		// A network the plan has not created yet (an isolated topology's own networks).
		return "<gateway of " + network + ">", nil
	}
	if gw == "" {
		return "", fmt.Errorf("Docker network %s has no IPv4 gateway (docker network inspect said %q)", network, strings.TrimSpace(string(out)))
	}
	return gw, nil
}

// gitListen is where the Git server listens: a free port on the gateway of the nodes'
// Docker network, which is an address of this host that pods reach (127.0.0.1 is not: it is
// each node's own loopback), or GitListen for SSH hosts.
func (b *Bed) gitListen(ctx context.Context) (string, error) {
	if b.state.GitAddr != "" {
		return b.state.GitAddr, nil
	}
	network := b.dockerNetwork()
	if b.opts.GitListen != "" || network == "" {
		if b.opts.GitListen == "" {
			return "", fmt.Errorf("the %s clusters' nodes are not Docker containers of this host: give the Git server an address of this host that their pods reach (--git-listen host:port)", b.prov.Name())
		}
		return b.opts.GitListen, nil
	}
	gw, err := b.gateway(ctx)
	if err != nil {
		return "", err
	}
	if b.opts.DryRun {
		return gw + ":<port>", nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		return "", fmt.Errorf("listen on %s, the gateway of Docker network %s: %w; the in-cluster bed serves Git to kind and k0s nodes on the Docker bridge of this host, so run it on Linux (Docker Desktop's VM hides the bridge)", gw, b.dockerNetwork(), err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr, nil
}

const gitProc = "git-server"

func (b *Bed) upGit(ctx context.Context) error {
	addr, err := b.gitListen(ctx)
	if err != nil {
		return err
	}
	b.state.GitAddr = addr
	root := filepath.Join(b.opts.Dir, "git")
	self := b.opts.SelfBinary
	if self == "" {
		self = "polykube-testbed"
		if !b.opts.DryRun {
			if self, err = gobuild.Build(ctx, b.opts.SourceDir, "./testbed/cmd/polykube-testbed", filepath.Join(b.opts.Dir, ".bin")); err != nil {
				return err
			}
		}
	}
	spec := proc.Spec{Name: gitProc, Path: self, Args: []string{"serve-git", "--root", root, "--listen", addr}, HealthURL: "http://" + addr + "/healthz"}
	if b.env.Runner.Note("start the Git server process: %s %s (health %s)", spec.Path, strings.Join(spec.Args, " "), spec.HealthURL) {
		if err := gitrepo.InitBare(root); err != nil {
			return err
		}
		if _, err := b.procs.Start(spec); err != nil {
			return err
		}
		if err := waitHTTP(ctx, b.env.Topology.Wait(topology.WaitProcess), spec.HealthURL); err != nil {
			return fmt.Errorf("%w (log: %s)", err, b.procs.LogPath(gitProc))
		}
		if err := b.saveState(); err != nil {
			return err
		}
	}
	seed, err := datapath.Seed(b.state.Topology, gitrepo.SourcesIn(b.opts.SourceDir), b.image())
	if err != nil {
		return err
	}
	b.state.Operator, b.state.ServiceAccount = seed.Deployment, seed.ServiceAccount
	if !b.env.Runner.Note("commit to %s: %s", b.GitURL(), strings.Join(sortedKeys(seed.Files), ", ")) {
		return nil
	}
	rev, err := gitrepo.Commit(ctx, b.GitURL(), gitrepo.Change{Put: seed.Files, Message: "testbed: operator base, cluster entry points and roster of " + b.state.Topology.Name})
	if err != nil {
		return err
	}
	b.state.Seeded = rev
	return b.saveState()
}

func waitHTTP(ctx context.Context, w topology.Wait, url string) error {
	return wait.For(ctx, w, url+" to answer", wait.HTTPOK(url))
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
