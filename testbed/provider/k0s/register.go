package k0s

import "github.com/polykube/polykube/testbed/provider"

// k0s's clusters run real pods: the add-ons run in them, with Cilium as their network. With a
// hosts file k0s is installed on those SSH hosts (k0sctl) instead of in Docker.
func init() {
	provider.Register(provider.Registration{
		Name: Name, Capabilities: Capabilities, Placements: []provider.Placement{provider.AddonsInCluster},
		New: func(s provider.Setup) (provider.Provider, error) {
			o := Options{Runner: s.Runner, KubeProxy: s.KubeProxy}
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
