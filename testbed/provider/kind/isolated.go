package kind

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"slices"
	"strings"
	"sync"

	"sigs.k8s.io/kind/pkg/cluster/nodes"

	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/overlay"
	"github.com/polykube/polykube/testbed/topology"
)

// A topology with network: isolated puts each kind cluster on a Docker network of its own
// (ClusterNetwork), between which Docker forwards nothing, and connects every node to one more
// network shared by all, the "internet" (InternetNetwork). In every node a firewall on the
// internet interface lets through only UDP to the overlay's port, in and out: what a cloud's
// security group does for the WireGuard port of a gateway. The nodes keep their default route
// on their own cluster's network, so a packet for another cluster's node or pod address
// leaves by the cluster's own gateway, where Docker's isolation between bridges drops it.

// kindNetworkEnv selects the Docker network kind creates a cluster's nodes on. It is kind's
// only way to choose the network (the library reads the environment when it provisions), so
// the provider sets it around each Create and creates isolated clusters one at a time.
const kindNetworkEnv = "KIND_EXPERIMENTAL_DOCKER_NETWORK"

// InternetChain is the chain of the raw table, in every node of an isolated topology, that
// drops whatever crosses the internet interface other than UDP to the overlay's port.
const InternetChain = "POLYKUBE-INTERNET"

// envMu serialises the Creates that set kindNetworkEnv, and the creation of the networks.
var envMu sync.Mutex

// ClusterNetwork is the Docker network of a cluster's nodes: kind's shared "kind" network,
// or with network isolated one per cluster, named after it.
func ClusterNetwork(top *topology.Topology, cluster string) string {
	if top == nil || !top.Isolated() {
		return "kind"
	}
	return cluster + "-net"
}

// InternetNetwork is the Docker network every node of an isolated topology joins, on which
// only the overlay's UDP passes; it is named after the topology.
func InternetNetwork(top *topology.Topology) string { return top.Name + "-internet" }

// isolated reports whether the provider's topology puts every cluster on its own network.
func (p *Provider) isolated() bool { return p.opts.Topology != nil && p.opts.Topology.Isolated() }

// createOnNetwork runs create with kind's network set to the cluster's own network.
func (p *Provider) createOnNetwork(cluster string, create func() error) error {
	if !p.isolated() {
		return create()
	}
	envMu.Lock()
	defer envMu.Unlock()
	old, had := os.LookupEnv(kindNetworkEnv)
	if err := os.Setenv(kindNetworkEnv, ClusterNetwork(p.opts.Topology, cluster)); err != nil {
		return err
	}
	defer func() {
		if had {
			_ = os.Setenv(kindNetworkEnv, old)
		} else {
			_ = os.Unsetenv(kindNetworkEnv)
		}
	}()
	return create()
}

// JoinInternet connects every node of the cluster to the internet network (creating it the
// first time) and installs the firewall that lets only the overlay's UDP cross it. It is
// idempotent, and Create calls it for an isolated topology; call it again after a node
// restarts (the firewall lives in the node's network namespace, which a restart renews).
func (p *Provider) JoinInternet(ctx context.Context, cluster string) error {
	if !p.isolated() {
		return fmt.Errorf("topology %s has network %s: only an isolated topology has an internet network", p.opts.Topology.Name, p.opts.Topology.Network)
	}
	top := p.opts.Topology
	internet := InternetNetwork(top)
	if err := p.ensureNetwork(ctx, internet); err != nil {
		return err
	}
	names, err := p.NodeNames(cluster)
	if err != nil {
		return err
	}
	for _, n := range names {
		addr, err := p.AddressOn(ctx, n, internet)
		if err != nil {
			return err
		}
		if addr == "" {
			if _, err := p.o.Runner.Run(ctx, execx.Command("docker", "network", "connect", internet, n)); err != nil {
				return fmt.Errorf("connect node %s of %s to the internet network %s: %w", n, cluster, internet, err)
			}
			if addr, err = p.AddressOn(ctx, n, internet); err != nil {
				return err
			}
			if addr == "" && !p.o.Runner.DryRun() {
				return fmt.Errorf("node %s has no IPv4 address on %s after docker network connect (docker inspect %s)", n, internet, n)
			}
		}
		if p.o.Runner.DryRun() {
			addr = "<" + n + " address on " + internet + ">"
		}
		if _, err := p.o.Runner.Run(ctx, execx.Command("docker", "exec", n, "sh", "-c", internetFirewallScript(addr, top.OverlayPort))); err != nil {
			return fmt.Errorf("in node %s of %s, firewall the internet interface so that only UDP to port %d passes: %w (the node needs iptables and ip, as kind's node image has)",
				n, cluster, top.OverlayPort, err)
		}
	}
	return nil
}

// ensureNetwork creates a Docker bridge network unless it exists.
func (p *Provider) ensureNetwork(ctx context.Context, name string) error {
	envMu.Lock()
	defer envMu.Unlock()
	if !p.o.Runner.DryRun() {
		if _, err := execx.Command("docker", "network", "inspect", name).Run(ctx); err == nil {
			return nil
		}
	}
	if _, err := p.o.Runner.Run(ctx, execx.Command("docker", "network", "create", "--driver", "bridge", name)); err != nil {
		return fmt.Errorf("create the Docker network %s: %w", name, err)
	}
	return nil
}

// AddressOn is a node container's IPv4 address on a Docker network, empty when it is not on
// it (kind's own node.IP refuses a node on two networks).
func (p *Provider) AddressOn(ctx context.Context, nodeName, network string) (string, error) {
	if p.o.Runner.DryRun() {
		return "", nil
	}
	out, err := execx.Command("docker", "inspect", "--format",
		fmt.Sprintf(`{{with index .NetworkSettings.Networks %q}}{{.IPAddress}}{{end}}`, network), nodeName).Output(ctx)
	if err != nil {
		return "", fmt.Errorf("find the address of node %s on Docker network %s: %w", nodeName, network, err)
	}
	ip := strings.TrimSpace(string(out))
	if ip == "" {
		return "", nil
	}
	if _, err := netip.ParseAddr(ip); err != nil {
		return "", fmt.Errorf("node %s on Docker network %s: docker inspect gave %q, not an address", nodeName, network, ip)
	}
	return ip, nil
}

// deleteNetworks removes the cluster's own network once its nodes are gone, and the internet
// network once no container is on it; a network still in use is left (Docker refuses).
func (p *Provider) deleteNetworks(ctx context.Context, cluster string) {
	if !p.isolated() {
		return
	}
	for _, n := range []string{ClusterNetwork(p.opts.Topology, cluster), InternetNetwork(p.opts.Topology)} {
		_, _ = p.o.Runner.Run(ctx, execx.Command("sh", "-c", "docker network inspect "+n+" >/dev/null 2>&1 || exit 0; docker network rm "+n+" >/dev/null 2>&1 || true"))
	}
}

// internetFirewallScript is the shell script run in a node whose address on the internet
// network is addr: in the raw table (consulted before anything Cilium or kube-proxy adds),
// every packet in or out of that interface jumps to InternetChain, which lets UDP to the
// overlay's port return and drops the rest. Run twice, it leaves one jump of each kind and
// rebuilds the chain.
func internetFirewallScript(addr string, port int) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	fmt.Fprintf(&b, "dev=$(ip -o -4 addr show | awk -v a=%s '{split($4, p, \"/\"); if (p[1] == a) print $2}')\n", addr)
	fmt.Fprintf(&b, "[ -n \"$dev\" ] || { echo \"no interface has the internet address %s\" >&2; exit 1; }\n", addr)
	fmt.Fprintf(&b, "iptables -w -t raw -N %[1]s 2>/dev/null || iptables -w -t raw -F %[1]s\n", InternetChain)
	fmt.Fprintf(&b, "iptables -w -t raw -A %s -p udp --dport %d -j RETURN\n", InternetChain, port)
	fmt.Fprintf(&b, "iptables -w -t raw -A %s -j DROP\n", InternetChain)
	fmt.Fprintf(&b, "iptables -w -t raw -C PREROUTING -i \"$dev\" -j %[1]s 2>/dev/null || iptables -w -t raw -I PREROUTING 1 -i \"$dev\" -j %[1]s\n", InternetChain)
	fmt.Fprintf(&b, "iptables -w -t raw -C OUTPUT -o \"$dev\" -j %[1]s 2>/dev/null || iptables -w -t raw -I OUTPUT 1 -o \"$dev\" -j %[1]s\n", InternetChain)
	// IPv6 on the internet network is not used; drop it whole so that nothing slips by.
	fmt.Fprintf(&b, "if ip6tables -w -t raw -L PREROUTING -n >/dev/null 2>&1; then ip6tables -w -t raw -C PREROUTING -i \"$dev\" -j DROP 2>/dev/null || ip6tables -w -t raw -I PREROUTING 1 -i \"$dev\" -j DROP; ip6tables -w -t raw -C OUTPUT -o \"$dev\" -j DROP 2>/dev/null || ip6tables -w -t raw -I OUTPUT 1 -o \"$dev\" -j DROP; fi\n")
	return b.String()
}

// overlayAddress is a cluster's address on the overlay of an isolated topology: host N of
// the overlay CIDR, N its cluster ID (overlay.OverlayAddress), as the agent on its node takes it.
func (p *Provider) overlayAddress(cluster string) (netip.Addr, error) {
	top := p.opts.Topology
	c := top.Cluster(cluster)
	if c == nil {
		return netip.Addr{}, fmt.Errorf("cluster %s is not in topology %s", cluster, top.Name)
	}
	cidr, err := netip.ParsePrefix(top.OverlayCIDR)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("topology %s: overlayCIDR %q: %w", top.Name, top.OverlayCIDR, err)
	}
	a, err := overlay.OverlayAddress(cidr, c.ClusterID)
	if err != nil {
		return netip.Addr{}, fmt.Errorf("cluster %s: %w", cluster, err)
	}
	return a, nil
}

// isolatedNodes are the nodes of a cluster of an isolated topology with their internet
// addresses (kind's node.IP refuses a node on two networks) and the cluster's overlay address
// as the address to probe.
func (p *Provider) isolatedNodes(ctx context.Context, cluster string, ns []nodes.Node) ([]node, error) {
	top := p.opts.Topology
	probe := ""
	if a, err := p.overlayAddress(cluster); err == nil {
		probe = a.String()
	}
	out := make([]node, 0, len(ns))
	for _, n := range ns {
		ip, err := p.AddressOn(ctx, n.String(), InternetNetwork(top))
		if err != nil {
			return nil, err
		}
		if ip == "" {
			return nil, fmt.Errorf("node %s of %s is not on the internet network %s (is it running? was it created with the isolated topology?)", n, cluster, InternetNetwork(top))
		}
		out = append(out, node{name: n.String(), ipv4: ip, probe: probe})
	}
	slices.SortFunc(out, func(x, y node) int { return strings.Compare(x.name, y.name) })
	return out, nil
}
