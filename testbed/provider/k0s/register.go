package k0s

import (
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/provider"
)

// k0s's clusters run real pods: the add-ons run in them, with Cilium as their network. With a
// hosts file k0s is installed on those SSH hosts (k0sctl) instead of in Docker.
func init() {
	provider.Register(provider.Registration{
		Name: Name, Capabilities: Capabilities, Placements: []provider.Placement{provider.AddonsInCluster},
		New: func(s provider.Setup) (provider.Provider, error) {
			o := Options{Runner: s.Runner, KubeProxy: s.KubeProxy, NodeImage: s.NodeImage, CgroupV1: s.CgroupV1}
			if s.Images == datapath.ImagesLocal {
				// The k0s node image built here carries these (scripts/images/k0s-node.sh).
				o.PodImages = &PodImages{KubeProxy: datapath.LocalKubeProxyImage, CoreDNS: datapath.LocalCoreDNSImage, Pause: datapath.LocalPauseImage}
			}
			if s.HostsFile != "" {
				hosts, err := LoadHosts(s.HostsFile, s.Topology)
				if err != nil {
					return nil, err
				}
				o.Mode, o.Hosts = ModeSSH, hosts
			}
			return New(s.Options, o)
		},
	})
}
