package kind

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

var _ provider.Partitioner = (*Provider)(nil)

// PartitionChain is the chain of the raw table, in every node, that holds the partition's
// DROP rules; PREROUTING and OUTPUT jump to it first. The raw table is the first that
// netfilter consults, so no ACCEPT of Cilium's (filter table) comes before the DROP, and in
// tunnel mode the VXLAN packets between nodes pass it too (the kernel's VXLAN device sends
// and receives them through the stack).
const PartitionChain = "POLYKUBE-PARTITION"

// node is a node container and its addresses on the kind network; in an isolated topology,
// its address on the internet network (what the overlay's UDP crosses) and, as probe, its
// overlay address.
type node struct {
	name, ipv4, ipv6 string
	// probe is the address reaches connects to, when not ipv4 or ipv6.
	probe string
}

// Partition implements provider.Partitioner: in every node of a, the traffic from and to the
// addresses of b's nodes is dropped, and in every node of b that of a's; it returns once a's
// control plane no longer reaches b's API server port. In an isolated topology the addresses
// are the nodes' internet addresses, so what is cut is the overlay between a and b (its UDP),
// and the API server port is probed at b's overlay address. The host is not a node: it still
// reaches both API servers, and both clusters still reach the host (the Git server).
//
// The rules name the addresses the nodes have now. A node restarted during a partition may
// come back on another address (docs/datapath.md), which the rules then do not name.
func (p *Provider) Partition(ctx context.Context, a, b string) error {
	return p.partition(ctx, a, b, true)
}

// Heal implements provider.Partitioner: it deletes the rules Partition added between a and b
// (only those; a partition of a from a third cluster stays) and returns once a's control
// plane reaches b's API server port again.
func (p *Provider) Heal(ctx context.Context, a, b string) error {
	return p.partition(ctx, a, b, false)
}

func (p *Provider) partition(ctx context.Context, a, b string, cut bool) error {
	if a == b {
		return fmt.Errorf("a partition needs two different clusters, got %s twice", a)
	}
	na, err := p.nodes(ctx, a)
	if err != nil {
		return err
	}
	nb, err := p.nodes(ctx, b)
	if err != nil {
		return err
	}
	sides := []struct {
		cluster, peer string
		nodes, peers  []node
	}{{a, b, na, nb}, {b, a, nb, na}}
	for _, side := range sides {
		script := partitionScript(side.peers, cut)
		for _, n := range side.nodes {
			if _, err := p.o.Runner.Run(ctx, execx.Command("docker", "exec", n.name, "sh", "-c", script)); err != nil {
				verb := "drop the traffic from and to"
				if !cut {
					verb = "stop dropping the traffic from and to"
				}
				return fmt.Errorf("in node %s of kind cluster %s, %s the nodes of %s: %w (the node needs iptables and ip6tables, as kind's node image has)",
					n.name, side.cluster, verb, side.peer, err)
			}
		}
	}
	if p.o.Runner.DryRun() {
		return nil
	}
	from, to := controlPlaneOf(na, a), controlPlaneOf(nb, b)
	if to.ipv4 == "" && to.ipv6 == "" {
		return fmt.Errorf("node %s of kind cluster %s has no address on the kind network", to.name, b)
	}
	if cut {
		return wait.For(ctx, p.opts.Topology.Wait(topology.WaitClusterStopped), fmt.Sprintf("the nodes of %s to stop reaching those of %s", a, b), func(ctx context.Context) error {
			if p.reaches(ctx, from, to) {
				return fmt.Errorf("%s still reaches %s's API server port", from.name, to.name)
			}
			return nil
		})
	}
	return wait.For(ctx, p.opts.Topology.Wait(topology.WaitClusterReady), fmt.Sprintf("the nodes of %s to reach those of %s again", a, b), func(ctx context.Context) error {
		if !p.reaches(ctx, from, to) {
			return fmt.Errorf("%s does not reach %s's API server port", from.name, to.name)
		}
		return nil
	})
}

// nodes lists a cluster's node containers with their addresses (placeholders in a dry run).
func (p *Provider) nodes(ctx context.Context, cluster string) ([]node, error) {
	if p.o.Runner.DryRun() {
		names, err := p.NodeNames(cluster)
		if err != nil {
			return nil, err
		}
		out := make([]node, len(names))
		for i, n := range names {
			out[i] = node{name: n, ipv4: "<ipv4 of " + n + ">"}
		}
		return out, nil
	}
	ns, err := p.listNodes(cluster)
	if err != nil {
		return nil, err
	}
	if p.isolated() {
		return p.isolatedNodes(ctx, cluster, ns)
	}
	out := make([]node, 0, len(ns))
	for _, n := range ns {
		v4, v6, err := n.IP()
		if err != nil {
			return nil, fmt.Errorf("the address of node %s of kind cluster %s (is it running? `polykube-testbed fault start apiserver %s` starts it): %w", n, cluster, cluster, err)
		}
		out = append(out, node{name: n.String(), ipv4: v4, ipv6: v6})
	}
	slices.SortFunc(out, func(x, y node) int { return strings.Compare(x.name, y.name) })
	return out, nil
}

// reaches reports whether a TCP connection from node from to the API server port of node to
// opens within two seconds (bash's /dev/tcp, which kind's node image has).
func (p *Provider) reaches(ctx context.Context, from, to node) bool {
	addr := to.probe
	if addr == "" {
		addr = to.ipv4
	}
	if addr == "" {
		addr = to.ipv6
	}
	probe := fmt.Sprintf("exec 3<>/dev/tcp/%s/%d", addr, APIServerPort)
	cmd := execx.Command("docker", "exec", from.name, "timeout", "2", "bash", "-c", probe)
	_, err := cmd.Run(ctx)
	return err == nil
}

// partitionScript is the shell script run in a node to drop (cut) or stop dropping the
// traffic from and to peers' addresses. Both ways are idempotent: a rule is added only when
// it is missing, and deleted as long as it is there.
func partitionScript(peers []node, cut bool) string {
	var b strings.Builder
	b.WriteString("set -e\n")
	if cut {
		fmt.Fprintf(&b, "chain() { $1 -w -t raw -N %[1]s 2>/dev/null || true; for c in PREROUTING OUTPUT; do $1 -w -t raw -C $c -j %[1]s 2>/dev/null || $1 -w -t raw -I $c 1 -j %[1]s; done; }\n", PartitionChain)
		fmt.Fprintf(&b, "rule() { $1 -w -t raw -C %[1]s $2 $3 -j DROP 2>/dev/null || $1 -w -t raw -A %[1]s $2 $3 -j DROP; }\n", PartitionChain)
	} else {
		fmt.Fprintf(&b, "rule() { while $1 -w -t raw -D %s $2 $3 -j DROP 2>/dev/null; do :; done; }\n", PartitionChain)
	}
	for _, fam := range []struct {
		tool string
		addr func(node) string
	}{{"iptables", func(n node) string { return n.ipv4 }}, {"ip6tables", func(n node) string { return n.ipv6 }}} {
		var addrs []string
		for _, n := range peers {
			if a := fam.addr(n); a != "" {
				addrs = append(addrs, a)
			}
		}
		if len(addrs) == 0 {
			continue
		}
		if cut {
			fmt.Fprintf(&b, "chain %s\n", fam.tool)
		}
		for _, a := range addrs {
			fmt.Fprintf(&b, "rule %[1]s -s %[2]s\nrule %[1]s -d %[2]s\n", fam.tool, a)
		}
	}
	return b.String()
}

// controlPlaneOf is the cluster's control-plane node (kind names it <cluster>-control-plane),
// or its first node.
func controlPlaneOf(ns []node, cluster string) node {
	for _, n := range ns {
		if n.name == ControlPlane(cluster) {
			return n
		}
	}
	return ns[0]
}
