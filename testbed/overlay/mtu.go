package overlay

import "fmt"

// Encapsulation overheads in bytes. WireGuard adds an outer IP header (20 for IPv4, 40 for
// IPv6), UDP (8) and its own header and authentication tag (32). Cilium's VXLAN adds an outer
// IPv4 header, UDP, the VXLAN header and the inner Ethernet header.
const (
	WireGuardOverheadIPv4 = 60
	WireGuardOverheadIPv6 = 80
	VXLANOverhead         = 50
	// minIPv6MTU is the smallest link MTU IPv6 allows; an overlay below it cannot carry IPv6.
	minIPv6MTU = 1280
	// minMTU is the smallest MTU the agent accepts for the WireGuard interface.
	minMTU = 576
)

// MTUs are the link MTUs that fit one inside the other.
type MTUs struct {
	// Underlay is the MTU of the node's network between clusters.
	Underlay int
	// WireGuard is the MTU of the overlay interface.
	WireGuard int
	// Pod is the MTU Cilium must give pods when it tunnels (VXLAN) over the overlay.
	Pod int
}

// ComputeMTU returns the MTUs for an underlay of the given MTU. ipv6Underlay is whether the
// peers reach each other over IPv6; a node whose peers mix families must assume IPv6, the
// larger overhead, or packets to the IPv6 peers are dropped.
func ComputeMTU(underlay int, ipv6Underlay bool) (MTUs, error) {
	overhead := WireGuardOverheadIPv4
	if ipv6Underlay {
		overhead = WireGuardOverheadIPv6
	}
	m := MTUs{Underlay: underlay, WireGuard: underlay - overhead}
	m.Pod = m.WireGuard - VXLANOverhead
	if m.Pod < minMTU {
		return MTUs{}, fmt.Errorf("underlay MTU %d leaves %d bytes for pods after WireGuard (%d) and VXLAN (%d); pods need at least %d: raise the underlay MTU",
			underlay, m.Pod, overhead, VXLANOverhead, minMTU)
	}
	return m, nil
}

// CarriesIPv6 is whether pods can use IPv6 at this pod MTU (IPv6 needs links of 1280 bytes).
func (m MTUs) CarriesIPv6() bool { return m.Pod >= minIPv6MTU }
