package kind

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/overlay"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// The overlay add-on on kind nodes: what Netmaker's netclient does on a real fleet's gateway.
// The test bed copies its own binary (built static for linux) into each node, runs
// `overlay-key` there (the node makes its key pair; only the public key comes out), derives
// every node's peer list from the roster (overlay.Peers over ClusterMembers whose
// spec.network is the node's internet address and the overlay port), copies it in and starts
// `serve-overlay-agent` in the node, which chooses kernel WireGuard or the embedded
// wireguard-go and says which.
const (
	// OverlayInterface is the WireGuard interface in every node.
	OverlayInterface = "polykube0"
	// OverlayDir is the agent's directory in a node: key pair, peer file, pid and log.
	OverlayDir = "/var/lib/polykube-overlay"
	// nodeBinary is where the test-bed binary is copied in a node.
	nodeBinary = "/usr/local/bin/polykube-testbed"
	// networkTypeOverlay is the ClusterMember spec.network.type of a member on a WireGuard
	// overlay; the API names it after Netmaker, which the test bed's agent stands in for.
	networkTypeOverlay = "netmaker"
)

// OverlayNode is one cluster's node on the overlay.
type OverlayNode struct {
	Cluster, Node string
	// Endpoint is where the node receives WireGuard (its internet address and the port).
	Endpoint string
	// NodeIP is the node's address on its cluster's own network (its Kubernetes InternalIP):
	// the peers route it into the overlay, so that Cilium's tunnels and ClusterMesh, which
	// address nodes by it, cross the overlay.
	NodeIP netip.Addr
	// Address is the node's overlay address with the overlay's prefix length.
	Address netip.Prefix
	// PublicKey is what the node published; its private key never left it.
	PublicKey wgtypes.Key
	// UnderlayMTU is the internet interface's MTU, from which the agent computes its own.
	UnderlayMTU int
	// Status is the agent's bring-up line (mode, reason, MTU, time).
	Status string
}

// OverlayRoster is the roster as the overlay sees it: one ClusterMember per cluster with
// spec.network (type and endpoint) and spec.mesh (cluster ID, pod CIDRs).
func OverlayRoster(top *topology.Topology, endpoints map[string]string) []polykubev1alpha1.ClusterMember {
	out := make([]polykubev1alpha1.ClusterMember, 0, len(top.Clusters))
	for _, c := range top.Clusters {
		var m polykubev1alpha1.ClusterMember
		m.ObjectMeta = metav1.ObjectMeta{Name: c.Name}
		m.Spec.Network = polykubev1alpha1.NetworkOverlay{Type: networkTypeOverlay, Endpoint: endpoints[c.Name]}
		m.Spec.Mesh.ClusterID = c.ClusterID
		m.Spec.Mesh.PodCIDRs = c.PodCIDRs
		out = append(out, m)
	}
	return out
}

// StartOverlay brings every cluster's node onto the overlay with binary (polykube-testbed
// built for linux, statically linked, as the nodes have no Go) and returns the nodes once
// every agent applied its peers. Clusters of more than one node are refused: the roster gives
// a member one overlay address, so one node per cluster is its gateway, and the routing of the
// other nodes through it is not built.
func (p *Provider) StartOverlay(ctx context.Context, binary string) ([]OverlayNode, error) {
	return p.startOverlay(ctx, binary, "")
}

// restoreOverlay brings the overlay back after the nodes of cluster restarted: a restarted node
// has a new network namespace (no WireGuard interface, no routes) and no agent, and Docker may
// have given it another address on the internet network. The binary and the key pair are still
// in the node (its /var survives a restart), so every node's peers are derived again, the
// restarted node's agent is started afresh and the others reload their peers, as a mesh
// controller would push a member's new endpoint.
func (p *Provider) restoreOverlay(ctx context.Context, cluster string) error {
	_, err := p.startOverlay(ctx, "", cluster)
	return err
}

// startOverlay is StartOverlay; binary "" copies nothing (the nodes have it), and the agent of
// the restarted cluster's node starts afresh (its pid file names a process of the node's
// previous life).
func (p *Provider) startOverlay(ctx context.Context, binary, restarted string) ([]OverlayNode, error) {
	top := p.opts.Topology
	if top == nil || top.Overlay != topology.OverlayWireGuard {
		return nil, fmt.Errorf("the topology has no overlay: set network: isolated and overlay: wireguard")
	}
	cidr, err := netip.ParsePrefix(top.OverlayCIDR)
	if err != nil {
		return nil, fmt.Errorf("overlayCIDR %q: %w", top.OverlayCIDR, err)
	}
	nodes := make([]OverlayNode, 0, len(top.Clusters))
	endpoints := map[string]string{}
	keys := map[string]wgtypes.Key{}
	for _, c := range top.Clusters {
		names, err := p.NodeNames(c.Name)
		if err != nil {
			return nil, err
		}
		if len(names) != 1 {
			return nil, fmt.Errorf("cluster %s has %d nodes: the overlay add-on puts one gateway per cluster and supports one-node clusters only (workers: 0)", c.Name, len(names))
		}
		n := OverlayNode{Cluster: c.Name, Node: names[0]}
		addr, err := overlay.OverlayAddress(cidr, c.ClusterID)
		if err != nil {
			return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
		}
		n.Address = netip.PrefixFrom(addr, cidr.Bits())
		ip, err := p.AddressOn(ctx, n.Node, InternetNetwork(top))
		if err != nil {
			return nil, err
		}
		if ip == "" {
			return nil, fmt.Errorf("node %s is not on the internet network %s: create the cluster with the isolated topology (Create joins it)", n.Node, InternetNetwork(top))
		}
		n.Endpoint = net.JoinHostPort(ip, strconv.Itoa(top.OverlayPort))
		own, err := p.AddressOn(ctx, n.Node, ClusterNetwork(top, c.Name))
		if err != nil {
			return nil, err
		}
		if n.NodeIP, err = netip.ParseAddr(own); err != nil {
			return nil, fmt.Errorf("node %s has no address on its cluster's network %s", n.Node, ClusterNetwork(top, c.Name))
		}
		if binary != "" {
			if _, err := p.o.Runner.Run(ctx, execx.Command("docker", "cp", binary, n.Node+":"+nodeBinary)); err != nil {
				return nil, fmt.Errorf("copy the test-bed binary into node %s: %w", n.Node, err)
			}
		}
		if c.Name == restarted {
			// Only a node whose agent is gone: a start of a cluster that was running (a fault's
			// heal after the scenario started it again) must keep its agent, not start a second.
			clear := fmt.Sprintf(`pid=$(cat %[1]s/agent.pid 2>/dev/null) && grep -q serve-overlay-agent /proc/$pid/cmdline 2>/dev/null && exit 0; rm -f %[1]s/agent.pid %[1]s/agent.log`, OverlayDir)
			if _, err := p.o.Runner.Run(ctx, execx.Command("docker", "exec", n.Node, "sh", "-c", clear)); err != nil {
				return nil, fmt.Errorf("clear the overlay agent's pid file in restarted node %s: %w", n.Node, err)
			}
		}
		out, err := p.o.Runner.Run(ctx, execx.Command("docker", "exec", n.Node, nodeBinary, "overlay-key", "--node-state-dir", OverlayDir))
		if err != nil {
			return nil, fmt.Errorf("make the WireGuard key pair in node %s: %w", n.Node, err)
		}
		if n.PublicKey, err = wgtypes.ParseKey(strings.TrimSpace(string(out))); err != nil {
			return nil, fmt.Errorf("node %s published %q, not a WireGuard public key: %w", n.Node, strings.TrimSpace(string(out)), err)
		}
		mtu, err := p.o.Runner.Run(ctx, execx.Command("docker", "exec", n.Node, "sh", "-c", interfaceOf(ip)+`; cat /sys/class/net/$dev/mtu`))
		if err != nil {
			return nil, fmt.Errorf("read the MTU of node %s's internet interface: %w", n.Node, err)
		}
		if n.UnderlayMTU, err = strconv.Atoi(strings.TrimSpace(string(mtu))); err != nil {
			return nil, fmt.Errorf("node %s: internet interface MTU %q: %w", n.Node, strings.TrimSpace(string(mtu)), err)
		}
		endpoints[c.Name], keys[c.Name] = n.Endpoint, n.PublicKey
		nodes = append(nodes, n)
	}
	roster := OverlayRoster(top, endpoints)
	for i := range nodes {
		if err := p.applyPeers(ctx, &nodes[i], nodes, roster, cidr, keys, nil); err != nil {
			return nil, err
		}
		if err := p.startAgent(ctx, &nodes[i]); err != nil {
			return nil, err
		}
	}
	return nodes, nil
}

// SetOverlayPeers rewrites a node's peer file from the roster less the members in without,
// and makes its agent reload it (SIGHUP): with a peer left out, the tunnel between the two
// is gone, as when a mesh controller drops a peer.
func (p *Provider) SetOverlayPeers(ctx context.Context, nodes []OverlayNode, node string, without ...string) error {
	top := p.opts.Topology
	cidr, err := netip.ParsePrefix(top.OverlayCIDR)
	if err != nil {
		return err
	}
	endpoints, keys := map[string]string{}, map[string]wgtypes.Key{}
	var self *OverlayNode
	for i, n := range nodes {
		endpoints[n.Cluster], keys[n.Cluster] = n.Endpoint, n.PublicKey
		if n.Cluster == node {
			self = &nodes[i]
		}
	}
	if self == nil {
		return fmt.Errorf("no overlay node of cluster %s", node)
	}
	if err := p.applyPeers(ctx, self, nodes, OverlayRoster(top, endpoints), cidr, keys, without); err != nil {
		return err
	}
	_, err = p.o.Runner.Run(ctx, execx.Command("docker", "exec", self.Node, "sh", "-c", "kill -HUP $(cat "+OverlayDir+"/agent.pid)"))
	if err != nil {
		return fmt.Errorf("make the overlay agent of %s reload its peers: %w", self.Node, err)
	}
	return nil
}

// applyPeers writes the node's peer file from the roster (less the members in without), each
// peer's allowed IPs extended with its node's address on its own network (all holds them).
func (p *Provider) applyPeers(ctx context.Context, n *OverlayNode, all []OverlayNode, roster []polykubev1alpha1.ClusterMember, cidr netip.Prefix, keys map[string]wgtypes.Key, without []string) error {
	var kept []polykubev1alpha1.ClusterMember
	for _, m := range roster {
		if !contains(without, m.Name) {
			kept = append(kept, m)
		}
	}
	peers, skipped, err := overlay.Peers(n.Cluster, kept, cidr, keys)
	if err != nil {
		return err
	}
	if len(skipped) > 0 {
		return fmt.Errorf("node %s: %s gets no peer entry: %s", n.Node, skipped[0].Member, skipped[0].Reason)
	}
	for i := range peers {
		for _, o := range all {
			if o.Cluster == peers[i].Member && o.NodeIP.IsValid() {
				peers[i].AllowedIPs = append(peers[i].AllowedIPs, netip.PrefixFrom(o.NodeIP, o.NodeIP.BitLen()))
			}
		}
	}
	dir, err := os.MkdirTemp("", "polykube-peers-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	file := filepath.Join(dir, "peers.json")
	if err := overlay.WritePeerFile(file, peers); err != nil {
		return err
	}
	// The agent reads the file when it starts and on SIGHUP; docker cp replaces it whole.
	if _, err := p.o.Runner.Run(ctx, execx.Command("docker", "cp", file, n.Node+":"+OverlayDir+"/peers.json")); err != nil {
		return fmt.Errorf("copy the peer file into node %s: %w", n.Node, err)
	}
	return nil
}

// startAgent starts the agent in the node, detached, unless one runs, and waits for its
// bring-up line and its peers.
func (p *Provider) startAgent(ctx context.Context, n *OverlayNode) error {
	top := p.opts.Topology
	script := fmt.Sprintf(`if [ -f %[1]s/agent.pid ] && grep -q serve-overlay-agent "/proc/$(cat %[1]s/agent.pid)/cmdline" 2>/dev/null; then kill -HUP "$(cat %[1]s/agent.pid)"; exit 0; fi
[ -c /dev/net/tun ] || { mkdir -p /dev/net && mknod /dev/net/tun c 10 200; }
echo $$ > %[1]s/agent.pid
exec %[2]s serve-overlay-agent --interface %[3]s --node-state-dir %[1]s --address %[4]s --port %[5]d --underlay-mtu %[6]d --peers %[1]s/peers.json > %[1]s/agent.log 2>&1`,
		OverlayDir, nodeBinary, OverlayInterface, n.Address, top.OverlayPort, n.UnderlayMTU)
	if _, err := p.o.Runner.Run(ctx, execx.Command("docker", "exec", "-d", n.Node, "sh", "-c", script)); err != nil {
		return fmt.Errorf("start the overlay agent in node %s: %w", n.Node, err)
	}
	return wait.For(ctx, topology.Wait{Timeout: topology.Duration{Duration: time.Minute}, Interval: topology.Duration{Duration: 200 * time.Millisecond}}, "the overlay agent of "+n.Node+" to apply its peers", func(ctx context.Context) error {
		out, err := execx.Command("docker", "exec", n.Node, "cat", OverlayDir+"/agent.log").Output(ctx)
		if err != nil {
			return err
		}
		log := string(out)
		for _, line := range strings.Split(log, "\n") {
			if strings.HasPrefix(line, "overlay "+OverlayInterface+" up:") {
				n.Status = line
			}
		}
		if n.Status == "" || !strings.Contains(log, "peers applied") {
			return fmt.Errorf("agent log so far: %q", log)
		}
		return nil
	})
}

// interfaceOf is shell that sets $dev to the node's interface holding addr.
func interfaceOf(addr string) string {
	return fmt.Sprintf(`dev=$(ip -o -4 addr show | awk -v a=%s '{split($4, p, "/"); if (p[1] == a) print $2}')`, addr)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
