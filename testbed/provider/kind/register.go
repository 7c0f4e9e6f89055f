package kind

import (
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// kind's clusters run real pods: the add-ons run in them, with Cilium as their network.
func init() {
	provider.Register(provider.Registration{
		Name: Name, Capabilities: Capabilities, Placements: []provider.Placement{provider.AddonsInCluster},
		New: func(s provider.Setup) (provider.Provider, error) {
			registry := s.Options.Topology != nil && s.Options.Topology.HasAddon(topology.AddonRegistry)
			return New(s.Options, Options{Runner: s.Runner, CgroupV1: s.CgroupV1, KubeProxy: s.KubeProxy, NodeImage: s.NodeImage, RegistryHosts: registry}), nil
		},
	})
}
