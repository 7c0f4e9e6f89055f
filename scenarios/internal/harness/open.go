package harness

import (
	"context"
	"errors"
	"io"

	"github.com/polykube/polykube/testbed/topology"
)

// OpenFunc brings up (or reuses) the federation of a topology for the suite.
type OpenFunc func(ctx context.Context, top *topology.Topology, log io.Writer) (Federation, error)

// Open is how the suite gets its federation. The test-bed adapter (testbed.go) sets it; while
// no adapter is compiled in, every scenario that needs clusters fails with ErrNoTestbed.
var Open OpenFunc = func(context.Context, *topology.Topology, io.Writer) (Federation, error) {
	return nil, ErrNoTestbed
}

// ErrNoTestbed says the suite was built without a test-bed adapter.
var ErrNoTestbed = errors.New("no test bed is compiled into the scenario suite (scenarios/internal/harness/testbed.go); scenarios that need clusters cannot run")

// ProviderCapabilities are the capabilities a test-bed provider's federation has, known
// before anything is brought up, so the runner can report what it will not run.
func ProviderCapabilities(provider string) []string {
	switch provider {
	case topology.ProviderKind, topology.ProviderK0s:
		return []string{CapabilityDatapath}
	}
	return nil
}
