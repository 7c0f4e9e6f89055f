//go:build linux

package overlay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"golang.zx2c4.com/wireguard/conn"
	"golang.zx2c4.com/wireguard/device"
	"golang.zx2c4.com/wireguard/ipc"
	"golang.zx2c4.com/wireguard/tun"
	"golang.zx2c4.com/wireguard/wgctrl"
	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	"github.com/polykube/polykube/testbed/internal/execx"
)

// Agent is one node's WireGuard interface.
type Agent struct {
	cfg    Config
	status Status
	run    execx.Runner
	client *wgctrl.Client
	// Userspace mode only.
	dev  *device.Device
	uapi net.Listener
	// routes are the peer prefixes routed into the interface, to remove the ones a new peer
	// list drops.
	routes map[netip.Prefix]bool
}

// Start brings the node's interface up with its key, address, port and MTU, and no peers.
func Start(ctx context.Context, cfg Config) (*Agent, error) {
	began := time.Now()
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	key, err := LoadOrCreateKey(cfg.StateDir)
	if err != nil {
		return nil, err
	}
	a := &Agent{cfg: cfg, run: execx.Exec{}, routes: map[netip.Prefix]bool{}}
	a.status = Status{Interface: cfg.Interface, PublicKey: key.PublicKey().String(), Address: cfg.Address, MTU: cfg.MTU, ListenPort: cfg.ListenPort}
	if err := a.createInterface(ctx); err != nil {
		return nil, err
	}
	ok := false
	defer func() {
		if !ok {
			_ = a.Close()
		}
	}()
	if a.client, err = wgctrl.New(); err != nil {
		return nil, fmt.Errorf("open WireGuard control (wgctrl): %w", err)
	}
	port := cfg.ListenPort
	if err := a.client.ConfigureDevice(cfg.Interface, wgtypes.Config{PrivateKey: &key, ListenPort: &port, ReplacePeers: true}); err != nil {
		return nil, fmt.Errorf("configure %s through wgctrl: %w", cfg.Interface, err)
	}
	if err := a.ip(ctx, "address", "replace", cfg.Address.String(), "dev", cfg.Interface); err != nil {
		return nil, err
	}
	if err := a.ip(ctx, "link", "set", "dev", cfg.Interface, "mtu", strconv.Itoa(cfg.MTU), "up"); err != nil {
		return nil, err
	}
	a.status.Took = time.Since(began)
	fmt.Fprintln(cfg.Log, a.status.String())
	ok = true
	return a, nil
}

// createInterface makes a kernel WireGuard link where the kernel can, else a TUN device
// driven by the embedded wireguard-go with its control socket, so that wgctrl configures both
// the same way.
func (a *Agent) createInterface(ctx context.Context) error {
	name := a.cfg.Interface
	if !a.cfg.Userspace {
		out, err := a.run.Run(ctx, execx.Command("ip", "link", "add", "dev", name, "type", "wireguard"))
		if err == nil {
			a.status.Mode, a.status.ModeReason = ModeKernel, "ip link add type wireguard succeeded"
			return nil
		}
		a.status.ModeReason = "kernel refused: " + firstLine(out, err)
	} else {
		a.status.ModeReason = "userspace requested"
	}
	a.status.Mode = ModeUserspace
	t, err := tun.CreateTUN(name, a.cfg.MTU)
	if err != nil {
		return fmt.Errorf("create TUN device %s for userspace WireGuard: %w (the agent needs root or CAP_NET_ADMIN and /dev/net/tun)", name, err)
	}
	logger := device.NewLogger(device.LogLevelError, "wireguard-go "+name+": ")
	logger.Errorf = func(format string, args ...any) {
		fmt.Fprintf(a.cfg.Log, "wireguard-go %s: "+format+"\n", append([]any{name}, args...)...)
	}
	a.dev = device.NewDevice(t, conn.NewDefaultBind(), logger)
	file, err := ipc.UAPIOpen(name)
	if err != nil {
		a.dev.Close()
		return fmt.Errorf("open the control socket of %s: %w", name, err)
	}
	if a.uapi, err = ipc.UAPIListen(name, file); err != nil {
		a.dev.Close()
		return fmt.Errorf("listen on the control socket of %s: %w", name, err)
	}
	go func() {
		for {
			c, err := a.uapi.Accept()
			if err != nil {
				return
			}
			go a.dev.IpcHandle(c)
		}
	}()
	return nil
}

// SetPeers replaces the interface's peers and routes each peer's allowed prefixes (other than
// the overlay's own prefix, which the address already routes) into the interface.
func (a *Agent) SetPeers(ctx context.Context, peers []Peer) error {
	cfgs := make([]wgtypes.PeerConfig, 0, len(peers))
	want := map[netip.Prefix]bool{}
	for _, p := range peers {
		ep, err := net.ResolveUDPAddr("udp", p.Endpoint)
		if err != nil {
			return fmt.Errorf("peer %s: endpoint %q: %w; fix spec.network.endpoint of ClusterMember %s", p.Member, p.Endpoint, err, p.Member)
		}
		allowed := make([]net.IPNet, 0, len(p.AllowedIPs))
		for _, pre := range p.AllowedIPs {
			allowed = append(allowed, net.IPNet{IP: pre.Addr().AsSlice(), Mask: net.CIDRMask(pre.Bits(), pre.Addr().BitLen())})
			if !a.cfg.Address.Masked().Contains(pre.Addr()) {
				want[pre] = true
			}
		}
		cfgs = append(cfgs, wgtypes.PeerConfig{PublicKey: p.PublicKey, Endpoint: ep, ReplaceAllowedIPs: true, AllowedIPs: allowed})
	}
	if err := a.client.ConfigureDevice(a.cfg.Interface, wgtypes.Config{ReplacePeers: true, Peers: cfgs}); err != nil {
		return fmt.Errorf("set %d peers on %s: %w", len(peers), a.cfg.Interface, err)
	}
	var errs []error
	for pre := range want {
		if err := a.ip(ctx, "route", "replace", pre.String(), "dev", a.cfg.Interface); err != nil {
			errs = append(errs, err)
			continue
		}
		a.routes[pre] = true
	}
	for pre := range a.routes {
		if !want[pre] {
			if err := a.ip(ctx, "route", "del", pre.String(), "dev", a.cfg.Interface); err != nil {
				errs = append(errs, err)
				continue
			}
			delete(a.routes, pre)
		}
	}
	fmt.Fprintf(a.cfg.Log, "overlay %s: %d peers applied\n", a.cfg.Interface, len(peers))
	return errors.Join(errs...)
}

// Status is what Start reported.
func (a *Agent) Status() Status { return a.status }

// Device returns the interface as wgctrl sees it (peers, handshakes, transfer counters).
func (a *Agent) Device() (*wgtypes.Device, error) { return a.client.Device(a.cfg.Interface) }

// Close removes the interface.
func (a *Agent) Close() error {
	var errs []error
	if a.client != nil {
		errs = append(errs, a.client.Close())
	}
	if a.dev != nil {
		if a.uapi != nil {
			errs = append(errs, a.uapi.Close())
		}
		a.dev.Close() // closes the TUN device, which removes the interface
		return errors.Join(errs...)
	}
	if a.status.Mode == ModeKernel {
		errs = append(errs, a.ip(context.Background(), "link", "del", "dev", a.cfg.Interface))
	}
	return errors.Join(errs...)
}

func (a *Agent) ip(ctx context.Context, args ...string) error {
	if _, err := a.run.Run(ctx, execx.Command("ip", args...)); err != nil {
		return fmt.Errorf("overlay %s: %w", a.cfg.Interface, err)
	}
	return nil
}

func firstLine(out []byte, err error) string {
	s := strings.TrimSpace(string(out))
	if s == "" {
		s = err.Error()
	}
	first, _, _ := strings.Cut(s, "\n")
	return first
}
