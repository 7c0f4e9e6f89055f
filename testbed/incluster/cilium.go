package incluster

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/polykube/polykube/testbed/datapath"
)

// ciliumOptions are each member's Cilium options: the images, kube-proxy replacement where the
// host allows it, the capabilities the host cannot grant, one CA for the mesh and every other
// member as a peer.
func (b *Bed) ciliumOptions(ctx context.Context) (func(datapath.Member) datapath.CiliumOptions, error) {
	var ca *datapath.CA
	peers := map[string]datapath.MeshPeer{}
	if len(b.env.Members) > 1 {
		if b.env.Runner.DryRun() {
			ca = &datapath.CA{CertPEM: []byte("<CA>"), KeyPEM: []byte("<key>")}
		} else {
			var err error
			if ca, err = datapath.LoadOrCreateCA(filepath.Join(b.opts.Dir, "clustermesh-ca"), "polykube-testbed "+b.state.Topology.Name+" ClusterMesh CA"); err != nil {
				return nil, fmt.Errorf("the ClusterMesh CA: %w", err)
			}
		}
		for _, m := range b.env.Members {
			ips := []string{"<" + m.Name + " node address>"}
			if a, ok := b.prov.(nodeAddresser); ok {
				got, err := a.NodeAddresses(ctx, m.Name)
				if err != nil {
					return nil, err
				}
				ips = got
				if b.state.MeshAddresses == nil {
					b.state.MeshAddresses = map[string][]string{}
				}
				b.state.MeshAddresses[m.Name] = got
			}
			// A peer is listed under the name its Cilium goes by (meshName), which its
			// clustermesh-apiserver publishes its state under.
			peers[m.Name] = datapath.MeshPeer{Name: m.CiliumName(), IPs: ips, Port: datapath.ClusterMeshNodePort(m)}
		}
	}
	images := datapath.CiliumImages{}
	if b.state.Topology.Images == datapath.ImagesLocal {
		images = datapath.LocalCiliumImages()
	}
	return func(m datapath.Member) datapath.CiliumOptions {
		o := datapath.CiliumOptions{Images: images, KubeProxyReplacement: b.kubeProxyReplacement(),
			MissingCapabilities: b.host.missingCaps, CA: ca, MTU: b.overlayMTU}
		for _, p := range b.env.Members {
			if p.Name != m.Name {
				o.Peers = append(o.Peers, peers[p.Name])
			}
		}
		return o
	}, nil
}

// nodeAddresser is implemented by providers whose nodes other clusters reach on a shared
// network (kind): the addresses of a cluster's clustermesh-apiserver NodePort.
type nodeAddresser interface {
	NodeAddresses(ctx context.Context, cluster string) ([]string, error)
}

// kubeProxyReplacement: Cilium replaces kube-proxy only on a cgroup v2 host; its socket load
// balancing needs cgroup v2 and a cgroup namespace per node (Cilium's kind guide).
func (b *Bed) kubeProxyReplacement() bool { return !b.host.cgroupV1 }
