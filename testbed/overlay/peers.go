package overlay

import (
	"fmt"
	"math/big"
	"net/netip"
	"sort"

	"golang.zx2c4.com/wireguard/wgctrl/wgtypes"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// NetworkNone is ClusterMember.spec.network.type for a member that shares a routable network
// with the others and takes no part in the overlay.
const NetworkNone = "none"

// Peer is one WireGuard peer of a node: another member's overlay gateway.
type Peer struct {
	// Member is the ClusterMember's name.
	Member string
	// PublicKey is the key that member's agent published.
	PublicKey wgtypes.Key
	// Endpoint is spec.network.endpoint (host:port), where the member receives WireGuard's UDP.
	Endpoint string
	// AllowedIPs are the member's overlay address and its pod CIDRs: what this node sends to it
	// and accepts from it.
	AllowedIPs []netip.Prefix
}

// Skipped is a member of the roster that gets no peer entry, with the reason.
type Skipped struct {
	Member string
	Reason string
}

// OnOverlay is whether a ClusterMember takes part in the overlay.
func OnOverlay(m *polykubev1alpha1.ClusterMember) bool {
	return m.Spec.Network.Type != "" && m.Spec.Network.Type != NetworkNone
}

// OverlayAddress is a member's address on the overlay: the host numbered by its ClusterMesh
// cluster ID inside overlayCIDR, which keeps addresses unique wherever cluster IDs are (the
// Federation checks that) and lets every node compute every address without coordination.
func OverlayAddress(overlayCIDR netip.Prefix, clusterID int32) (netip.Addr, error) {
	overlayCIDR = overlayCIDR.Masked()
	hostBits := overlayCIDR.Addr().BitLen() - overlayCIDR.Bits()
	if clusterID < 1 || (hostBits < 31 && int64(clusterID) >= int64(1)<<hostBits-1) {
		return netip.Addr{}, fmt.Errorf("cluster ID %d has no host address in overlay CIDR %s: use a larger overlay CIDR", clusterID, overlayCIDR)
	}
	n := new(big.Int).SetBytes(overlayCIDR.Addr().AsSlice())
	n.Add(n, big.NewInt(int64(clusterID)))
	b := n.FillBytes(make([]byte, overlayCIDR.Addr().BitLen()/8))
	addr, _ := netip.AddrFromSlice(b)
	return addr, nil
}

// Peers derives the WireGuard peer list of the node of member local from the roster: every
// other member on the overlay with a published key becomes a peer reached at its
// spec.network.endpoint, carrying its overlay address and its pod CIDRs. Members that cannot be
// peers (no overlay, no endpoint, no key yet, invalid CIDR) are returned in skipped with the
// reason rather than failing the whole list: one member late to publish its key must not cut
// the others off. The result is sorted by member name, so every call with the same roster
// gives the same list.
func Peers(local string, members []polykubev1alpha1.ClusterMember, overlayCIDR netip.Prefix, keys map[string]wgtypes.Key) (peers []Peer, skipped []Skipped, err error) {
	var self *polykubev1alpha1.ClusterMember
	for i := range members {
		if members[i].Name == local {
			self = &members[i]
		}
	}
	if self == nil {
		return nil, nil, fmt.Errorf("no ClusterMember named %q in the roster: the overlay agent needs its own member to know its overlay address", local)
	}
	if !OnOverlay(self) {
		return nil, nil, fmt.Errorf("ClusterMember %q has spec.network.type %q: set it to netmaker to put this cluster on the overlay", local, self.Spec.Network.Type)
	}
	sorted := append([]polykubev1alpha1.ClusterMember(nil), members...)
	sort.Slice(sorted, func(i, j int) bool { return sorted[i].Name < sorted[j].Name })
	for i := range sorted {
		m := &sorted[i]
		if m.Name == local {
			continue
		}
		skip := func(format string, args ...any) {
			skipped = append(skipped, Skipped{Member: m.Name, Reason: fmt.Sprintf(format, args...)})
		}
		switch {
		case !OnOverlay(m):
			skip("spec.network.type is %q: it shares the underlay and is reached without the overlay", m.Spec.Network.Type)
			continue
		case m.Spec.Network.Endpoint == "":
			skip("spec.network.endpoint is empty: set the host:port where its overlay gateway receives UDP")
			continue
		}
		key, ok := keys[m.Name]
		if !ok {
			skip("no public key published yet: its overlay agent has not started")
			continue
		}
		addr, err := OverlayAddress(overlayCIDR, m.Spec.Mesh.ClusterID)
		if err != nil {
			skip("%v", err)
			continue
		}
		allowed := []netip.Prefix{netip.PrefixFrom(addr, addr.BitLen())}
		bad := false
		for _, c := range m.Spec.Mesh.PodCIDRs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				skip("spec.mesh.podCIDRs has %q, not a CIDR", c)
				bad = true
				break
			}
			allowed = append(allowed, p.Masked())
		}
		if bad {
			continue
		}
		peers = append(peers, Peer{Member: m.Name, PublicKey: key, Endpoint: m.Spec.Network.Endpoint, AllowedIPs: allowed})
	}
	return peers, skipped, nil
}
