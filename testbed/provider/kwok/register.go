package kwok

import (
	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/provider"
)

// kwok's clusters run no real pods, so the add-ons run beside them as host processes; the
// control-plane binaries come from the toolchain's kwok group.
func init() {
	provider.Register(provider.Registration{
		Name: Name, Capabilities: Capabilities, Placements: []provider.Placement{provider.AddonsOnHost}, ToolGroups: []string{"kwok"},
		New: func(s provider.Setup) (provider.Provider, error) {
			t := s.Tools
			return New(s.Options, Binaries{
				Kwokctl: t[toolchain.Kwokctl], KwokController: t[toolchain.Kwok], KubeAPIServer: t[toolchain.KubeAPIServer],
				KubeControllerManager: t[toolchain.KubeControllerManager], KubeScheduler: t[toolchain.KubeScheduler], Etcd: t[toolchain.Etcd],
			})
		},
	})
}
