package kind

import (
	"os/exec"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/topology"
)

func TestInternetFirewallScript_OnlyTheOverlayPortOnTheInternetInterface(t *testing.T) {
	g := NewWithT(t)
	state := t.TempDir()
	// Twice: a node whose firewall is installed again (Create after a restart) keeps one of each.
	runScript(t, state, internetFirewallScript("172.30.0.3", 51820))
	runScript(t, state, internetFirewallScript("172.30.0.3", 51820))
	g.Expect(rules(t, state, "iptables")).To(ConsistOf(
		"raw chain POLYKUBE-INTERNET",
		"raw POLYKUBE-INTERNET -p udp --dport 51820 -j RETURN",
		"raw POLYKUBE-INTERNET -j DROP",
		"raw PREROUTING -i eth1 -j POLYKUBE-INTERNET",
		"raw OUTPUT -o eth1 -j POLYKUBE-INTERNET",
	), "the cluster's own interface (eth0) is not touched")
	g.Expect(rules(t, state, "ip6tables")).To(ConsistOf("raw PREROUTING -i eth1 -j DROP", "raw OUTPUT -o eth1 -j DROP"))

	// An address no interface has is an error, not a firewall on nothing.
	cmd := exec.Command("sh", "-c", internetFirewallScript("172.30.0.99", 51820))
	cmd.Env = append(cmd.Environ(), "PATH="+state+"/bin:/usr/bin:/bin", "IPT_STATE="+state)
	out, err := cmd.CombinedOutput()
	g.Expect(err).To(HaveOccurred())
	g.Expect(string(out)).To(ContainSubstring("no interface has the internet address 172.30.0.99"))
}

func TestNetworks_SharedOrOnePerCluster(t *testing.T) {
	g := NewWithT(t)
	top := kindTopology()
	g.Expect(ClusterNetwork(top, "alpha")).To(Equal("kind"))
	top.Network, top.Overlay = topology.NetworkIsolated, topology.OverlayWireGuard
	g.Expect(ClusterNetwork(top, "alpha")).To(Equal("alpha-net"))
	g.Expect(InternetNetwork(top)).To(Equal(top.Name + "-internet"))
}
