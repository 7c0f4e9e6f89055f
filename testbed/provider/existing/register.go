package existing

import "github.com/polykube/polykube/testbed/provider"

// Existing clusters are used as they are; the add-ons run beside them as host processes, each
// with its cluster's kubeconfig.
func init() {
	provider.Register(provider.Registration{
		Name: Name, Capabilities: Capabilities, Placements: []provider.Placement{provider.AddonsOnHost, provider.AddonsInCluster},
		New: func(s provider.Setup) (provider.Provider, error) { return New(s.Options), nil },
	})
}
