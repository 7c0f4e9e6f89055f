// Package overlay is the test bed's WireGuard overlay for clusters that share no network: what
// Netmaker (or any WireGuard mesh) gives a real fleet, small enough to run on every node of a
// test bed.
//
// Three pieces, each usable alone:
//
//   - MTU: the arithmetic that keeps a pod's packet inside one underlay packet once WireGuard
//     (60 bytes on an IPv4 underlay, 80 on IPv6) and Cilium's VXLAN (50) have wrapped it. A
//     wrong MTU is the classic overlay failure: small packets pass, large ones vanish.
//   - Peers: a pure function from the roster (ClusterMember.spec.network and spec.mesh) and the
//     public keys the nodes published to the WireGuard peer list of one node.
//   - Agent: brings up the node's interface. It makes the node's key pair itself and writes the
//     private key 0600 in the node's state directory; only the public key leaves the node. It
//     uses kernel WireGuard where `ip link add type wireguard` works and the userspace
//     implementation (wireguard-go, embedded) otherwise, and says which. Both are configured
//     through wgctrl, as wg(8) would.
//
// The kind provider runs the agent on every node of an isolated topology
// (testbed/provider/kind, StartOverlay); the in-cluster bed's up does not start it yet
// (docs/known-limitations.md). The netns test in this package proves the pieces alone.
package overlay
