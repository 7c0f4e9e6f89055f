package main

import (
	"fmt"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed/overlay"
)

// newServeOverlayAgentCmd is the WireGuard agent of one node, which the kind provider starts
// in each node of an isolated topology (StartOverlay); it is not meant to be run by hand.
func newServeOverlayAgentCmd() *cobra.Command {
	var cfg overlay.Config
	var address, peerFile string
	var underlayMTU int
	var ipv6Underlay bool
	cmd := &cobra.Command{
		Use:    "serve-overlay-agent",
		Short:  "Bring this node onto the WireGuard overlay and keep its peers from a peer file (SIGHUP reloads it)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			addr, err := netip.ParsePrefix(address)
			if err != nil {
				return fmt.Errorf("--address %q: want the node's overlay address with the overlay's prefix length, such as 100.96.0.1/16", address)
			}
			mtus, err := overlay.ComputeMTU(underlayMTU, ipv6Underlay)
			if err != nil {
				return err
			}
			cfg.Address, cfg.MTU, cfg.Log = addr, mtus.WireGuard, cmd.OutOrStdout()
			reload := make(chan os.Signal, 1)
			signal.Notify(reload, syscall.SIGHUP)
			defer signal.Stop(reload)
			return overlay.Serve(cmd.Context(), cfg, peerFile, reload)
		},
	}
	cmd.Flags().StringVar(&cfg.Interface, "interface", "polykube0", "WireGuard interface name")
	cmd.Flags().StringVar(&cfg.StateDir, "node-state-dir", "", "directory of the node's private key (made 0600 on first start)")
	cmd.Flags().StringVar(&address, "address", "", "the node's overlay address with prefix length")
	cmd.Flags().IntVar(&cfg.ListenPort, "port", 51820, "UDP port WireGuard receives on")
	cmd.Flags().IntVar(&underlayMTU, "underlay-mtu", 1500, "MTU of the network between the nodes")
	cmd.Flags().BoolVar(&ipv6Underlay, "ipv6-underlay", false, "peers are reached over IPv6 (80 bytes of WireGuard overhead instead of 60)")
	cmd.Flags().BoolVar(&cfg.Userspace, "userspace", false, "use the embedded wireguard-go even where kernel WireGuard works")
	cmd.Flags().StringVar(&peerFile, "peers", "", "peer file (JSON) written from the roster")
	_ = cmd.MarkFlagRequired("node-state-dir")
	_ = cmd.MarkFlagRequired("address")
	_ = cmd.MarkFlagRequired("peers")
	return cmd
}

// newOverlayKeyCmd makes the node's WireGuard key pair (or reads the one it has) and prints
// the public key: the test bed runs it in each node before the agent, to collect the public
// keys the peer lists need; the private key stays in the node's state directory.
func newOverlayKeyCmd() *cobra.Command {
	var stateDir string
	cmd := &cobra.Command{
		Use:    "overlay-key",
		Short:  "Make this node's WireGuard key pair unless it has one, and print its public key",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			key, err := overlay.LoadOrCreateKey(stateDir)
			if err != nil {
				return err
			}
			fmt.Fprintln(cmd.OutOrStdout(), key.PublicKey().String())
			return nil
		},
	}
	cmd.Flags().StringVar(&stateDir, "node-state-dir", "", "directory of the node's private key (made 0600 on first run)")
	_ = cmd.MarkFlagRequired("node-state-dir")
	return cmd
}
