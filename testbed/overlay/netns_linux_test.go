//go:build linux

package overlay

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/net/icmp"
	"golang.org/x/net/ipv4"
	"golang.org/x/sys/unix"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// agentHelperEnv makes the test binary run as one node's overlay agent (Serve) instead of
// the tests: the netns test starts it inside a node's network namespace with `ip netns exec`,
// so that every socket and the TUN device of the agent live in that namespace.
const agentHelperEnv = "POLYKUBE_OVERLAY_TEST_AGENT"

func TestMain(m *testing.M) {
	if spec := os.Getenv(agentHelperEnv); spec != "" {
		os.Exit(runAgentHelper(spec))
	}
	os.Exit(m.Run())
}

type agentHelperSpec struct {
	Config   Config
	PeerFile string
}

func runAgentHelper(spec string) int {
	var s agentHelperSpec
	if err := json.Unmarshal([]byte(spec), &s); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	s.Config.Log = os.Stdout
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	reload := make(chan os.Signal, 1)
	signal.Notify(reload, syscall.SIGHUP)
	if err := Serve(ctx, s.Config, s.PeerFile, reload); err != nil {
		fmt.Fprintln(os.Stdout, "agent failed:", err)
		return 1
	}
	return 0
}

// The underlay: each node on its own link to a router, which forwards only WireGuard's UDP.
const (
	wgPort       = 51820
	underlayMTU  = 1500
	transferSize = 64 << 20
	pingCount    = 50
)

// TestOverlay_NetworkNamespaces builds two nodes that share no network: each in its own
// network namespace with a "pod" address, joined only through a router namespace whose
// firewall forwards nothing but UDP to and from the WireGuard port. It proves that a direct
// packet between the pod subnets is dropped, that ping, a large DF packet and a 64 MiB TCP
// transfer cross through the overlay, that a packet over the MTU fails at the sender instead of
// vanishing, and that the tunnel recovers after a node's underlay address moves. It prints
// throughput and latency over the tunnel beside the plain routed path.
//
// It needs root, /dev/net/tun, ip and iptables; without them it is skipped and says why.
func TestOverlay_NetworkNamespaces(t *testing.T) {
	requireNetns(t)
	tb := newNetnsBed(t)

	// 1. Before the overlay: the router knows the pod subnets, so only its firewall stands
	// between them. A direct TCP connection and a node-to-node ping must both be dropped.
	dropsBefore := tb.routerDrops(t)
	if err := tb.dial(t, "a", "10.1.0.1", "10.2.0.1:5001", 2*time.Second); err == nil {
		t.Fatalf("a direct TCP connection from pod 10.1.0.1 to pod 10.2.0.1 crossed the router without the overlay")
	}
	if _, err := tb.ping(t, "a", "172.31.1.2", "172.31.2.2", 56, time.Second); err == nil {
		t.Fatalf("a direct ping from node a to node b crossed the router without the overlay")
	}
	dropsAfterProbes := tb.routerDrops(t)
	if drops := dropsAfterProbes - dropsBefore; drops == 0 {
		t.Fatalf("the router's firewall dropped nothing: the direct probes failed for another reason")
	} else {
		t.Logf("direct probes without the overlay: dropped by the router (%d packets)", drops)
	}

	// 2. The overlay: one agent per node, peers derived from the roster.
	mtus, err := ComputeMTU(underlayMTU, false)
	if err != nil {
		t.Fatal(err)
	}
	overlayCIDR := netip.MustParsePrefix("100.96.0.0/16")
	roster := []polykubev1alpha1.ClusterMember{
		testMember("alpha", 1, "netmaker", fmt.Sprintf("172.31.1.2:%d", wgPort), "10.1.0.0/24"),
		testMember("bravo", 2, "netmaker", fmt.Sprintf("172.31.2.2:%d", wgPort), "10.2.0.0/24"),
	}
	agents := map[string]*agentProc{}
	keys := map[string]wgtypes.Key{}
	for i, node := range []string{"a", "b"} {
		addr, err := OverlayAddress(overlayCIDR, roster[i].Spec.Mesh.ClusterID)
		if err != nil {
			t.Fatal(err)
		}
		ag := tb.startAgent(t, node, Config{
			Interface: tb.prefix + "w" + node, StateDir: filepath.Join(tb.dir, node),
			Address: netip.PrefixFrom(addr, overlayCIDR.Bits()), ListenPort: wgPort, MTU: mtus.WireGuard,
		})
		agents[roster[i].Name] = ag
		keys[roster[i].Name] = ag.publicKey
		t.Logf("node %s: %s", node, ag.upLine)
		if !strings.Contains(ag.upLine, "mode="+ModeKernel) && !strings.Contains(ag.upLine, "mode="+ModeUserspace) {
			t.Fatalf("node %s: the agent did not say which WireGuard it uses: %q", node, ag.upLine)
		}
		priv, err := os.Stat(filepath.Join(tb.dir, node, privateKeyFile))
		if err != nil || priv.Mode().Perm() != 0o600 {
			t.Fatalf("node %s: private key %v (mode %v), want a 0600 file in the node's state", node, err, priv)
		}
	}
	for i := range roster {
		peers, skipped, err := Peers(roster[i].Name, roster, overlayCIDR, keys)
		if err != nil || len(skipped) > 0 || len(peers) != 1 {
			t.Fatalf("peers of %s: %+v, skipped %+v, %v", roster[i].Name, peers, skipped, err)
		}
		agents[roster[i].Name].applyPeers(t, peers)
	}

	// 3. Through the tunnel: ping, a packet filling the MTU with DF set, one byte more fails at
	// the sender (no black hole), then the transfer.
	waitPing(t, tb, "a", "10.1.0.1", "10.2.0.1", 10*time.Second)
	if _, err := tb.ping(t, "a", "10.1.0.1", "10.2.0.1", mtus.WireGuard-28, 2*time.Second); err != nil {
		t.Fatalf("a %d-byte DF packet (the overlay MTU) did not cross the tunnel: %v", mtus.WireGuard, err)
	}
	t.Logf("a %d-byte packet with DF crossed the tunnel (WireGuard MTU %d on a %d-byte underlay)", mtus.WireGuard, mtus.WireGuard, underlayMTU)
	if _, err := tb.ping(t, "a", "10.1.0.1", "10.2.0.1", mtus.WireGuard-28+1, 2*time.Second); !errors.Is(err, unix.EMSGSIZE) {
		t.Fatalf("a DF packet one byte over the overlay MTU: %v, want EMSGSIZE at the sender (anything else is a black hole)", err)
	}
	tunnelRate := tb.transfer(t, "a", "10.1.0.1", "b", "10.2.0.1:5001")
	tunnelRTT := tb.latency(t, "a", "10.1.0.1", "10.2.0.1")

	// The pods' traffic crossed the router as WireGuard UDP only: nothing was dropped while
	// the overlay carried it, and the WireGuard rules counted the packets.
	if d := tb.routerDrops(t) - dropsAfterProbes; d != 0 {
		t.Fatalf("the router dropped %d packets while the pods talked over the overlay: something tried to cross outside the tunnel", d)
	}
	accepted := tb.routerAccepted(t)
	if accepted == 0 {
		t.Fatalf("the router forwarded no WireGuard UDP, yet the pods talked: the traffic took another path")
	}

	// 4. The plain path for comparison: the same router, opened for TCP 5002 and ICMP.
	tb.openPlain(t)
	plainRate := tb.transfer(t, "a", "172.31.1.2", "b", "172.31.2.2:5002")
	plainRTT := tb.latency(t, "a", "172.31.1.2", "172.31.2.2")
	tb.closePlain(t)
	t.Logf("one TCP stream of %d MiB: overlay %.2f Gbit/s, plain routed path %.2f Gbit/s", transferSize>>20,
		tunnelRate/1e9, plainRate/1e9)
	t.Logf("ICMP round trip, mean of %d: overlay %s, plain routed path %s", pingCount, tunnelRTT, plainRTT)
	fmt.Printf("overlay figures: throughput overlay=%.2fGbit/s plain=%.2fGbit/s; rtt overlay=%s plain=%s; mtu underlay=%d wireguard=%d pod(vxlan)=%d; router forwarded %d WireGuard UDP packets\n",
		tunnelRate/1e9, plainRate/1e9, tunnelRTT, plainRTT, underlayMTU, mtus.WireGuard, mtus.Pod, tb.routerAccepted(t))

	// 5. Node b's underlay address moves (a NAT rebinding, a new public IP). WireGuard follows
	// an authenticated peer to its new address, so b's next packet heals the tunnel both ways.
	tb.ns(t, "b", "ip", "address", "del", "172.31.2.2/24", "dev", "vb")
	tb.ns(t, "b", "ip", "address", "add", "172.31.2.3/24", "dev", "vb")
	tb.ns(t, "b", "ip", "route", "replace", "default", "via", "172.31.2.1")
	waitPing(t, tb, "b", "10.2.0.1", "10.1.0.1", 10*time.Second)
	waitPing(t, tb, "a", "10.1.0.1", "10.2.0.1", 10*time.Second)
	dev := agents["alpha"].device(t, tb)
	if len(dev) == 0 || !strings.Contains(dev, "172.31.2.3") {
		t.Fatalf("after the move, alpha's peer endpoint is %q, want bravo's new address 172.31.2.3", dev)
	}
	t.Logf("after node b moved to 172.31.2.3 the tunnel recovered; alpha now sends to %s", dev)
}

func requireNetns(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("the netns overlay test is not short (-short given)")
	}
	if os.Geteuid() != 0 {
		t.Skip("the netns overlay test needs root to create network namespaces and a TUN device; run it as root (CI runs it)")
	}
	if _, err := os.Stat("/dev/net/tun"); err != nil {
		t.Skipf("the netns overlay test needs /dev/net/tun for userspace WireGuard: %v", err)
	}
	for _, tool := range []string{"ip", "iptables"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the netns overlay test needs %s on PATH (iproute2, iptables)", tool)
		}
	}
}

type netnsBed struct {
	prefix string
	dir    string
	names  map[string]string // node or "r" -> namespace name
}

func newNetnsBed(t *testing.T) *netnsBed {
	prefix := fmt.Sprintf("pk%d", os.Getpid()%100000)
	tb := &netnsBed{prefix: prefix, dir: t.TempDir(), names: map[string]string{}}
	for _, n := range []string{"r", "a", "b"} {
		tb.names[n] = prefix + "-" + n
		run(t, "ip", "netns", "add", tb.names[n])
		name := tb.names[n]
		t.Cleanup(func() { _ = exec.Command("ip", "netns", "del", name).Run() })
		tb.ns(t, n, "ip", "link", "set", "lo", "up")
	}
	for i, n := range []string{"a", "b"} {
		sub := i + 1
		// veth r<n> in the router, v<n> in the node.
		run(t, "ip", "link", "add", prefix+"r"+n, "netns", tb.names["r"], "mtu", strconv.Itoa(underlayMTU), "type", "veth",
			"peer", "name", "v"+n, "netns", tb.names[n], "mtu", strconv.Itoa(underlayMTU))
		tb.ns(t, "r", "ip", "link", "set", prefix+"r"+n, "name", "r"+n)
		tb.ns(t, "r", "ip", "address", "add", fmt.Sprintf("172.31.%d.1/24", sub), "dev", "r"+n)
		tb.ns(t, "r", "ip", "link", "set", "r"+n, "up")
		tb.ns(t, n, "ip", "address", "add", fmt.Sprintf("172.31.%d.2/24", sub), "dev", "v"+n)
		tb.ns(t, n, "ip", "link", "set", "v"+n, "up")
		tb.ns(t, n, "ip", "route", "add", "default", "via", fmt.Sprintf("172.31.%d.1", sub))
		// The node's "pod": an address of its pod subnet. The router routes the pod subnet to
		// the node, so that only the firewall keeps pods apart.
		tb.ns(t, n, "ip", "address", "add", fmt.Sprintf("10.%d.0.1/32", sub), "dev", "lo")
		tb.ns(t, "r", "ip", "route", "add", fmt.Sprintf("10.%d.0.0/24", sub), "via", fmt.Sprintf("172.31.%d.2", sub))
	}
	tb.ns(t, "r", "sysctl", "-qw", "net.ipv4.ip_forward=1")
	tb.ns(t, "r", "iptables", "-P", "FORWARD", "DROP")
	tb.ns(t, "r", "iptables", "-A", "FORWARD", "-p", "udp", "--dport", strconv.Itoa(wgPort), "-j", "ACCEPT")
	tb.ns(t, "r", "iptables", "-A", "FORWARD", "-p", "udp", "--sport", strconv.Itoa(wgPort), "-j", "ACCEPT")
	return tb
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func (tb *netnsBed) ns(t *testing.T, n string, args ...string) string {
	t.Helper()
	return run(t, "ip", append([]string{"netns", "exec", tb.names[n]}, args...)...)
}

var policyDrops = regexp.MustCompile(`policy DROP (\d+) packets`)

func (tb *netnsBed) routerDrops(t *testing.T) int {
	t.Helper()
	out := tb.ns(t, "r", "iptables", "-nvxL", "FORWARD")
	m := policyDrops.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no policy drop counter in:\n%s", out)
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// routerAccepted sums the packets of the rules that accept WireGuard's UDP.
func (tb *netnsBed) routerAccepted(t *testing.T) int {
	t.Helper()
	total := 0
	for _, line := range strings.Split(tb.ns(t, "r", "iptables", "-nvxL", "FORWARD"), "\n") {
		f := strings.Fields(line)
		if len(f) > 3 && f[2] == "ACCEPT" && (f[3] == "udp" || f[3] == "17") && strings.Contains(line, "pt:"+strconv.Itoa(wgPort)) {
			n, _ := strconv.Atoi(f[0])
			total += n
		}
	}
	return total
}

func (tb *netnsBed) openPlain(t *testing.T) {
	for _, rule := range [][]string{{"-p", "tcp", "--dport", "5002"}, {"-p", "tcp", "--sport", "5002"}, {"-p", "icmp"}} {
		tb.ns(t, "r", append(append([]string{"iptables", "-I", "FORWARD", "1"}, rule...), "-j", "ACCEPT")...)
	}
}

func (tb *netnsBed) closePlain(t *testing.T) {
	for _, rule := range [][]string{{"-p", "tcp", "--dport", "5002"}, {"-p", "tcp", "--sport", "5002"}, {"-p", "icmp"}} {
		tb.ns(t, "r", append(append([]string{"iptables", "-D", "FORWARD"}, rule...), "-j", "ACCEPT")...)
	}
}

// inNetns runs f on a thread moved into node n's namespace. Sockets f creates stay in that
// namespace for their whole life, whichever thread uses them later.
func (tb *netnsBed) inNetns(t *testing.T, n string, f func() error) error {
	t.Helper()
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer orig.Close()
	target, err := os.Open("/run/netns/" + tb.names[n])
	if err != nil {
		runtime.UnlockOSThread()
		t.Fatal(err)
	}
	defer target.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		t.Fatalf("enter netns %s: %v", tb.names[n], err)
	}
	ferr := f()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// Leave the thread locked: Go ends it with the goroutine rather than reuse it in the
		// wrong namespace.
		t.Fatalf("return from netns %s: %v", tb.names[n], err)
	}
	runtime.UnlockOSThread()
	return ferr
}

func (tb *netnsBed) dial(t *testing.T, n, src, dst string, timeout time.Duration) error {
	return tb.inNetns(t, n, func() error {
		d := net.Dialer{Timeout: timeout, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		c, err := d.Dial("tcp", dst)
		if err == nil {
			c.Close()
		}
		return err
	})
}

// ping sends one ICMP echo of an IP packet of 28+payload bytes with DF set, from src in node
// n, and waits for its reply.
func (tb *netnsBed) ping(t *testing.T, n, src, dst string, payload int, timeout time.Duration) (time.Duration, error) {
	var c *net.IPConn
	if err := tb.inNetns(t, n, func() error {
		pc, err := net.ListenPacket("ip4:icmp", src)
		if err != nil {
			return err
		}
		c = pc.(*net.IPConn)
		return nil
	}); err != nil {
		t.Fatalf("open ICMP socket in %s: %v", n, err)
	}
	defer c.Close()
	raw, err := c.SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.IPPROTO_IP, unix.IP_MTU_DISCOVER, unix.IP_PMTUDISC_DO)
	}); err != nil || serr != nil {
		t.Fatalf("set DF: %v %v", err, serr)
	}
	id, seq := os.Getpid()&0xffff, int(time.Now().UnixNano()&0x7fff)
	msg := icmp.Message{Type: ipv4.ICMPTypeEcho, Body: &icmp.Echo{ID: id, Seq: seq, Data: make([]byte, payload)}}
	b, err := msg.Marshal(nil)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := c.WriteTo(b, &net.IPAddr{IP: net.ParseIP(dst)}); err != nil {
		return 0, err
	}
	_ = c.SetReadDeadline(start.Add(timeout))
	buf := make([]byte, 65536)
	for {
		k, _, err := c.ReadFrom(buf)
		if err != nil {
			return 0, err
		}
		m, err := icmp.ParseMessage(1, buf[:k])
		if err != nil || m.Type != ipv4.ICMPTypeEchoReply {
			continue
		}
		if e, ok := m.Body.(*icmp.Echo); ok && e.ID == id && e.Seq == seq {
			return time.Since(start), nil
		}
	}
}

func waitPing(t *testing.T, tb *netnsBed, n, src, dst string, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	var err error
	for time.Now().Before(deadline) {
		if _, err = tb.ping(t, n, src, dst, 56, 500*time.Millisecond); err == nil {
			return
		}
	}
	t.Fatalf("no ping reply from %s to %s (node %s) within %s: %v", src, dst, n, within, err)
}

func (tb *netnsBed) latency(t *testing.T, n, src, dst string) time.Duration {
	var total time.Duration
	for i := 0; i < pingCount; i++ {
		rtt, err := tb.ping(t, n, src, dst, 56, 2*time.Second)
		if err != nil {
			t.Fatalf("ping %d from %s to %s: %v", i, src, dst, err)
		}
		total += rtt
	}
	return total / pingCount
}

// transfer sends transferSize bytes over one TCP connection from src in node n to a listener at
// dst in node m and returns the rate in bit/s, measured until the receiver has read it all.
func (tb *netnsBed) transfer(t *testing.T, n, src, m, dst string) float64 {
	t.Helper()
	var l net.Listener
	if err := tb.inNetns(t, m, func() (err error) { l, err = net.Listen("tcp", dst); return err }); err != nil {
		t.Fatalf("listen on %s in %s: %v", dst, m, err)
	}
	defer l.Close()
	type result struct {
		n   int64
		err error
	}
	got := make(chan result, 1)
	go func() {
		c, err := l.Accept()
		if err != nil {
			got <- result{err: err}
			return
		}
		defer c.Close()
		k, err := io.Copy(io.Discard, c)
		got <- result{k, err}
	}()
	var conn net.Conn
	if err := tb.inNetns(t, n, func() (err error) {
		d := net.Dialer{Timeout: 5 * time.Second, LocalAddr: &net.TCPAddr{IP: net.ParseIP(src)}}
		conn, err = d.Dial("tcp", dst)
		return err
	}); err != nil {
		t.Fatalf("connect %s -> %s: %v", src, dst, err)
	}
	start := time.Now()
	chunk := make([]byte, 256<<10)
	for sent := 0; sent < transferSize; sent += len(chunk) {
		if _, err := conn.Write(chunk); err != nil {
			t.Fatalf("send to %s: %v", dst, err)
		}
	}
	conn.(*net.TCPConn).CloseWrite()
	select {
	case r := <-got:
		elapsed := time.Since(start)
		conn.Close()
		if r.err != nil || r.n != transferSize {
			t.Fatalf("%s received %d of %d bytes: %v", dst, r.n, transferSize, r.err)
		}
		return float64(transferSize*8) / elapsed.Seconds()
	case <-time.After(2 * time.Minute):
		t.Fatalf("transfer to %s did not finish in 2m", dst)
	}
	return 0
}

type agentProc struct {
	name      string
	iface     string
	cmd       *exec.Cmd
	peerFile  string
	publicKey wgtypes.Key
	upLine    string
	lines     chan string
	mu        sync.Mutex
	log       strings.Builder
}

func (tb *netnsBed) startAgent(t *testing.T, n string, cfg Config) *agentProc {
	t.Helper()
	a := &agentProc{name: n, iface: cfg.Interface, peerFile: filepath.Join(tb.dir, n+"-peers.json"), lines: make(chan string, 64)}
	spec, err := json.Marshal(agentHelperSpec{Config: cfg, PeerFile: a.peerFile})
	if err != nil {
		t.Fatal(err)
	}
	a.cmd = exec.Command("ip", "netns", "exec", tb.names[n], os.Args[0], "-test.run=^$")
	a.cmd.Env = append(os.Environ(), agentHelperEnv+"="+string(spec))
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	a.cmd.Stderr = a.cmd.Stdout
	if err := a.cmd.Start(); err != nil {
		t.Fatalf("start the agent of node %s: %v", n, err)
	}
	t.Cleanup(func() {
		_ = a.cmd.Process.Signal(syscall.SIGTERM)
		_ = a.cmd.Wait()
	})
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			a.mu.Lock()
			a.log.WriteString(s.Text() + "\n")
			a.mu.Unlock()
			select {
			case a.lines <- s.Text():
			default:
			}
		}
		close(a.lines)
	}()
	a.upLine = a.waitLine(t, " up: ", 30*time.Second)
	_, key, _ := strings.Cut(a.upLine, "publicKey=")
	key, _, _ = strings.Cut(key, " ")
	if a.publicKey, err = wgtypes.ParseKey(key); err != nil {
		t.Fatalf("node %s published no public key in %q: %v", n, a.upLine, err)
	}
	a.waitLine(t, "0 peers applied", 10*time.Second)
	return a
}

func (a *agentProc) waitLine(t *testing.T, substr string, within time.Duration) string {
	t.Helper()
	timeout := time.After(within)
	for {
		select {
		case line, ok := <-a.lines:
			if !ok {
				t.Fatalf("the agent of node %s exited before printing %q:\n%s", a.name, substr, a.output())
			}
			if strings.Contains(line, "failed") || strings.Contains(line, "not applied") {
				t.Fatalf("the agent of node %s: %s\n%s", a.name, line, a.output())
			}
			if strings.Contains(line, substr) {
				return line
			}
		case <-timeout:
			t.Fatalf("the agent of node %s printed no %q within %s:\n%s", a.name, substr, within, a.output())
		}
	}
}

func (a *agentProc) output() string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.log.String()
}

func (a *agentProc) applyPeers(t *testing.T, peers []Peer) {
	t.Helper()
	if err := WritePeerFile(a.peerFile, peers); err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	a.waitLine(t, fmt.Sprintf("%d peers applied", len(peers)), 10*time.Second)
}

// device reads the peers' endpoints of the agent's interface through wgctrl, from the test
// process: the userspace control socket is a file, reachable from any namespace.
func (a *agentProc) device(t *testing.T, tb *netnsBed) string {
	t.Helper()
	out := tb.ns(t, a.name, "ip", "-brief", "link", "show", a.iface)
	if !strings.Contains(out, a.iface) {
		t.Fatalf("interface %s missing in node %s: %s", a.iface, a.name, out)
	}
	var endpoints []string
	if err := tb.inNetns(t, a.name, func() error {
		c, err := wgctrlNew()
		if err != nil {
			return err
		}
		defer c.Close()
		d, err := c.Device(a.iface)
		if err != nil {
			return err
		}
		for _, p := range d.Peers {
			if p.Endpoint != nil {
				endpoints = append(endpoints, p.Endpoint.String())
			}
		}
		return nil
	}); err != nil {
		t.Fatalf("read %s through wgctrl: %v", a.iface, err)
	}
	return strings.Join(endpoints, ",")
}

func wgctrlNew() (*wgctrl.Client, error) { return wgctrl.New() }
