package overlay

import (
	"fmt"
	"io"
	"net/netip"
	"time"
)

// Modes of the WireGuard implementation the agent uses.
const (
	// ModeKernel is the Linux kernel's WireGuard module.
	ModeKernel = "kernel"
	// ModeUserspace is wireguard-go embedded in the agent, over a TUN device.
	ModeUserspace = "userspace"
)

// Config is what the agent needs to bring a node onto the overlay.
type Config struct {
	// Interface is the WireGuard interface's name, unique on the host for userspace mode (its
	// control socket is /var/run/wireguard/<Interface>.sock, shared by network namespaces).
	Interface string
	// StateDir holds the node's private key.
	StateDir string
	// Address is the node's overlay address with the overlay's prefix length (OverlayAddress).
	Address netip.Prefix
	// ListenPort is the UDP port WireGuard receives on.
	ListenPort int
	// MTU of the interface, from ComputeMTU.
	MTU int
	// Userspace skips kernel WireGuard even where the module is present.
	Userspace bool
	// Log receives one line per action; nil discards them.
	Log io.Writer
}

func (c Config) validate() error {
	switch {
	case c.Interface == "" || len(c.Interface) > 15:
		return fmt.Errorf("interface name %q: want 1 to 15 characters (a Linux interface name)", c.Interface)
	case c.StateDir == "":
		return fmt.Errorf("no state directory: the agent keeps the node's private key there")
	case !c.Address.IsValid():
		return fmt.Errorf("no overlay address: give the node's address with the overlay's prefix length, such as 100.96.0.1/16")
	case c.ListenPort < 1 || c.ListenPort > 65535:
		return fmt.Errorf("listen port %d: want 1-65535", c.ListenPort)
	case c.MTU < minMTU:
		return fmt.Errorf("MTU %d is below %d: compute it with ComputeMTU from the underlay's MTU", c.MTU, minMTU)
	}
	return nil
}

// Status is what the agent reports once the interface is up.
type Status struct {
	Interface string
	Mode      string
	// ModeReason says why the mode was chosen (the kernel's answer when it refused).
	ModeReason string
	PublicKey  string
	Address    netip.Prefix
	MTU        int
	ListenPort int
	// Took is how long bring-up took.
	Took time.Duration
}

func (s Status) String() string {
	return fmt.Sprintf("overlay %s up: mode=%s (%s) address=%s mtu=%d port=%d publicKey=%s in %s",
		s.Interface, s.Mode, s.ModeReason, s.Address, s.MTU, s.ListenPort, s.PublicKey, s.Took.Round(time.Millisecond))
}

func logOf(c Config) io.Writer {
	if c.Log == nil {
		return io.Discard
	}
	return c.Log
}
