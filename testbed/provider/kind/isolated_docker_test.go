package kind

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/overlay"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// isolatedE2EEnv runs TestIsolated_OverlayOnKindNodes: it needs Docker, the local kind node
// image (polykube-testbed images build kind-node) and a few minutes; `make test` does not run it.
const isolatedE2EEnv = "POLYKUBE_KIND_ISOLATED_E2E"

// TestIsolated_OverlayOnKindNodes creates two kind clusters of an isolated topology (no CNI:
// the test is about the nodes' networks, not Cilium) and proves, in order:
//   - before the overlay, nothing crosses between the clusters: a TCP connection from one node
//     to the other's address on its cluster network, to its address on the internet network,
//     and from a pod-CIDR address to one of the other cluster's all fail; UDP to the overlay
//     port on the internet network passes (the peer's firewall counts it), UDP to another
//     port is dropped (the sender's firewall counts it);
//   - StartOverlay brings an agent up in each node (keys made there) with the roster's peers;
//   - over the overlay: TCP to the peer's overlay address, and a pod-CIDR-to-pod-CIDR call
//     carrying 8 MiB (segments at the overlay's MTU);
//   - the partition: with each node's peer of the other removed, the overlay call fails, and
//     comes back once the peers are restored.
//
// The pod-CIDR addresses are /32s on each node's loopback standing in for pods: with no CNI
// no pod runs, and the overlay's routing of pod CIDRs is what is under test.
func TestIsolated_OverlayOnKindNodes(t *testing.T) {
	if os.Getenv(isolatedE2EEnv) == "" {
		t.Skipf("set %s=1 to create two kind clusters on isolated networks (Docker, the local kind node image, minutes)", isolatedE2EEnv)
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	prefix := os.Getenv("POLYKUBE_KIND_ISOLATED_PREFIX")
	if prefix == "" {
		prefix = "iso"
	}
	a, b := prefix+"-a", prefix+"-b"
	top, err := topology.Parse([]byte(fmt.Sprintf(`apiVersion: testbed.polykube.kismet.io/v1alpha1
kind: Topology
name: %s
provider: kind
network: isolated
overlay: wireguard
clusters:
- {name: %s, provider: kind, clusterID: 1, podCIDRs: [10.241.0.0/16], serviceCIDR: 10.91.0.0/16}
- {name: %s, provider: kind, clusterID: 2, podCIDRs: [10.242.0.0/16], serviceCIDR: 10.92.0.0/16}
`, prefix, a, b)))
	g.Expect(err).NotTo(HaveOccurred())
	dir := t.TempDir()
	p := New(provider.Options{Dir: dir, Topology: top, Log: testLog{t}}, Options{NodeImage: "polykube.local/kind-node:" + toolchain.KubernetesVersion, CgroupV1: os.Getenv("POLYKUBE_CGROUP_V1") != ""})
	if os.Getenv("POLYKUBE_KEEP") == "" {
		t.Cleanup(func() {
			for _, c := range []string{a, b} {
				if err := p.Delete(context.Background(), c); err != nil {
					t.Logf("delete %s: %v", c, err)
				}
			}
		})
	}
	began := time.Now()
	for _, c := range top.Clusters {
		_, err := p.Create(ctx, c)
		g.Expect(err).NotTo(HaveOccurred())
	}
	t.Logf("two isolated kind clusters up in %s", time.Since(began).Round(time.Second))

	na, nb := ControlPlane(a), ControlPlane(b)
	addr := func(node, network string) string {
		ip, err := p.AddressOn(ctx, node, network)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(ip).NotTo(BeEmpty(), "%s on %s", node, network)
		return ip
	}
	bOwn, bInternet, aInternet := addr(nb, ClusterNetwork(top, b)), addr(nb, InternetNetwork(top)), addr(na, InternetNetwork(top))
	t.Logf("%s: %s on %s, %s on the internet; %s: %s on the internet", nb, bOwn, ClusterNetwork(top, b), bInternet, na, aInternet)
	podA, podB := "10.241.255.254", "10.242.255.254"
	dockerExec(t, na, "ip", "addr", "replace", podA+"/32", "dev", "lo")
	dockerExec(t, nb, "ip", "addr", "replace", podB+"/32", "dev", "lo")

	// Before the overlay.
	g.Expect(tcpConnects(ctx, na, bOwn, APIServerPort, "")).To(BeFalse(), "node to node on the clusters' own networks")
	g.Expect(tcpConnects(ctx, na, bInternet, APIServerPort, "")).To(BeFalse(), "node to node on the internet network")
	g.Expect(tcpConnects(ctx, na, podB, APIServerPort, podA)).To(BeFalse(), "pod CIDR to pod CIDR")
	returnedB := internetCounter(t, nb, "RETURN")
	droppedA := internetCounter(t, na, "DROP")
	dockerExec(t, na, "sh", "-c", fmt.Sprintf("echo probe | socat -u - UDP:%s:%d", bInternet, top.OverlayPort))
	// The sender's own firewall drops it: the kernel answers the send with EPERM.
	out, err := exec.Command("docker", "exec", na, "sh", "-c", fmt.Sprintf("echo probe | socat -u - UDP:%s:%d", bInternet, top.OverlayPort+1)).CombinedOutput()
	g.Expect(err).To(HaveOccurred(), "UDP to port %d must not be sent", top.OverlayPort+1)
	g.Expect(string(out)).To(ContainSubstring("Operation not permitted"))
	g.Eventually(func() int { return internetCounter(t, nb, "RETURN") }).Should(BeNumerically(">", returnedB), "UDP to the overlay port reaches the peer")
	g.Expect(internetCounter(t, na, "DROP")).To(BeNumerically(">", droppedA), "UDP to another port is dropped on the way out")
	t.Logf("before the overlay: TCP node to node (both networks) and pod CIDR to pod CIDR dropped; UDP to %d passed (%s counted %d), UDP to %d dropped (%s counted %d)",
		top.OverlayPort, nb, internetCounter(t, nb, "RETURN"), top.OverlayPort+1, na, internetCounter(t, na, "DROP"))

	// The overlay.
	bin := filepath.Join(t.TempDir(), "polykube-testbed")
	build := exec.CommandContext(ctx, "go", "build", "-o", bin, "./testbed/cmd/polykube-testbed")
	build.Dir, build.Env = "../../..", append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux")
	out, err = build.CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), string(out))
	began = time.Now()
	nodes, err := p.StartOverlay(ctx, bin)
	g.Expect(err).NotTo(HaveOccurred())
	t.Logf("overlay on %d nodes in %s", len(nodes), time.Since(began).Round(time.Millisecond))
	for _, n := range nodes {
		t.Logf("%s (%s): endpoint %s, underlay MTU %d: %s", n.Node, n.Cluster, n.Endpoint, n.UnderlayMTU, n.Status)
		g.Expect(n.Status).To(ContainSubstring("mode=userspace"), "this kernel has no WireGuard module")
		g.Expect(dockerOut(t, n.Node, "stat", "-c", "%a", OverlayDir+"/wireguard.key")).To(Equal("600"))
	}
	mtus, err := overlay.ComputeMTU(nodes[0].UnderlayMTU, false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(nodes[0].Status).To(ContainSubstring("mtu=" + strconv.Itoa(mtus.WireGuard)))
	bOverlay := nodes[1].Address.Addr().String()
	g.Eventually(func() bool { return tcpConnects(ctx, na, bOverlay, APIServerPort, "") }, 30*time.Second, time.Second).Should(BeTrue(), "node to node over the overlay")
	const payload = 8 << 20
	began = time.Now()
	got := transfer(t, na, nb, podA, podB, payload)
	took := time.Since(began)
	g.Expect(got).To(Equal(payload), "pod CIDR to pod CIDR over the overlay, 8 MiB")
	t.Logf("over the overlay: TCP %s -> %s:%d connects; %d bytes %s -> %s in %s (%.0f Mbit/s, including docker exec)",
		na, bOverlay, APIServerPort, got, podA, podB, took.Round(time.Millisecond), float64(payload)*8/took.Seconds()/1e6)
	g.Expect(tcpConnects(ctx, na, bOwn, APIServerPort, "")).To(BeTrue(), "%s's address on its own network is routed into the overlay", nb)
	g.Expect(tcpConnects(ctx, na, bInternet, APIServerPort, "")).To(BeFalse(), "the internet network still carries only the overlay")

	// The partition: each side drops the other from its peers.
	g.Expect(p.SetOverlayPeers(ctx, nodes, a, b)).To(Succeed())
	g.Expect(p.SetOverlayPeers(ctx, nodes, b, a)).To(Succeed())
	g.Eventually(func() bool { return tcpConnects(ctx, na, bOverlay, APIServerPort, "") }, 30*time.Second, time.Second).Should(BeFalse(), "partitioned")
	g.Expect(tcpConnects(ctx, na, podB, APIServerPort, podA)).To(BeFalse(), "partitioned, pod CIDRs")
	g.Expect(p.SetOverlayPeers(ctx, nodes, a)).To(Succeed())
	g.Expect(p.SetOverlayPeers(ctx, nodes, b)).To(Succeed())
	g.Eventually(func() bool { return tcpConnects(ctx, na, bOverlay, APIServerPort, "") }, 30*time.Second, time.Second).Should(BeTrue(), "healed")
	t.Logf("partition: the overlay between %s and %s cut (peers removed) and healed", a, b)

	// The provider's Partitioner, as the scenarios' partition step uses it: the overlay's UDP
	// between the two is dropped.
	began = time.Now()
	g.Expect(p.Partition(ctx, a, b)).To(Succeed())
	g.Expect(tcpConnects(ctx, na, podB, APIServerPort, podA)).To(BeFalse(), "Partition: pod CIDRs")
	g.Expect(tcpConnects(ctx, nb, overlayAddrOf(nodes, a), APIServerPort, "")).To(BeFalse(), "Partition: both ways")
	cut := time.Since(began)
	began = time.Now()
	g.Expect(p.Heal(ctx, a, b)).To(Succeed())
	g.Expect(tcpConnects(ctx, na, podB, APIServerPort, podA)).To(BeTrue(), "healed: pod CIDRs")
	t.Logf("Partition: overlay UDP between %s and %s dropped in %s, healed in %s", a, b, cut.Round(time.Millisecond), time.Since(began).Round(time.Millisecond))
}

type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

func dockerOut(t *testing.T, node string, args ...string) string {
	t.Helper()
	out, err := exec.Command("docker", append([]string{"exec", node}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("docker exec %s %s: %v\n%s", node, strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func dockerExec(t *testing.T, node string, args ...string) { t.Helper(); dockerOut(t, node, args...) }

// tcpConnects reports whether a TCP connection from node to addr:port opens within 2 s, from
// the source address src when it is given.
func tcpConnects(ctx context.Context, node, addr string, port int, src string) bool {
	target := fmt.Sprintf("TCP:%s:%d,connect-timeout=2", addr, port)
	if src != "" {
		target += ",bind=" + src
	}
	return exec.CommandContext(ctx, "docker", "exec", node, "timeout", "5", "socat", "-u", "/dev/null", target).Run() == nil
}

// internetCounter is the packet count of the first rule of target in node's InternetChain.
func internetCounter(t *testing.T, node, target string) int {
	t.Helper()
	for _, line := range strings.Split(dockerOut(t, node, "iptables", "-w", "-t", "raw", "-L", InternetChain, "-v", "-x", "-n"), "\n") {
		f := strings.Fields(line)
		if len(f) > 2 && f[2] == target {
			n, err := strconv.Atoi(f[0])
			if err != nil {
				t.Fatalf("counter %q: %v", line, err)
			}
			return n
		}
	}
	t.Fatalf("no %s rule in %s of %s", target, InternetChain, node)
	return 0
}

// transfer sends n bytes from src in node from to dst:8080 in node to, and returns how many
// the receiver wrote.
func transfer(t *testing.T, from, to, src, dst string, n int) int {
	t.Helper()
	dockerExec(t, to, "rm", "-f", "/tmp/rx")
	dockerExec(t, to, "sh", "-c", fmt.Sprintf("timeout 60 socat -u TCP-LISTEN:8080,bind=%s,reuseaddr OPEN:/tmp/rx,creat,trunc >/tmp/rx.log 2>&1 &", dst))
	time.Sleep(500 * time.Millisecond)
	dockerExec(t, from, "sh", "-c", fmt.Sprintf("head -c %d /dev/zero | timeout 60 socat -u - TCP:%s:8080,bind=%s,connect-timeout=5", n, dst, src))
	var got int
	for range 50 {
		got, _ = strconv.Atoi(dockerOut(t, to, "sh", "-c", "wc -c < /tmp/rx"))
		if got >= n {
			break
		}
		time.Sleep(200 * time.Millisecond)
	}
	return got
}

func overlayAddrOf(nodes []OverlayNode, cluster string) string {
	for _, n := range nodes {
		if n.Cluster == cluster {
			return n.Address.Addr().String()
		}
	}
	return ""
}
