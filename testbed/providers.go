package testbed

// The providers a test bed can get clusters from. Each registers itself (provider.Register)
// with its capabilities, its constructor and where its add-ons run; adding a provider is its
// package and one line here.
import (
	_ "github.com/polykube/polykube/testbed/provider/existing"
	_ "github.com/polykube/polykube/testbed/provider/k0s"
	_ "github.com/polykube/polykube/testbed/provider/kind"
	_ "github.com/polykube/polykube/testbed/provider/kwok"
)
