package harness

import (
	"context"
	"fmt"
	"slices"

	"k8s.io/client-go/rest"

	"github.com/polykube/polykube/testbed"
)

// Capabilities a Federation may have. A scenario tagged with a capability runs only on a
// federation that has it; the others report it as not run, with the reason.
const (
	// CapabilityDatapath: real pods, a real network and Cilium ClusterMesh (kind, k0s).
	CapabilityDatapath = "datapath"
	// CapabilityPartition: the provider can cut the network between clusters (the network
	// fault); @partition scenarios need it.
	CapabilityPartition = "partition"
)

// Federation is the running federation the scenarios share: clusters, the Git repository Flux
// delivers from, an operator per cluster, and the faults that can be injected. The test bed
// provides it; the harness only uses it.
type Federation interface {
	// Provider names the test-bed provider (kwok, kind, k0s, existing).
	Provider() string
	// Capabilities lists what the federation can do beyond the hermetic tier.
	Capabilities() []string
	// Clusters lists the member clusters by name, in topology order.
	Clusters() []string
	// AdminConfig is a cluster-admin client configuration for the harness's own checks and
	// set-up (never what the operator uses).
	AdminConfig(cluster string) (*rest.Config, error)
	// OperatorConfig is the configuration the cluster's operator runs with: a token of its
	// ServiceAccount in that cluster.
	OperatorConfig(cluster string) (*rest.Config, error)

	// Git is the repository every cluster's Flux delivers from.
	Git() Git
	// Faults injects and heals failures.
	Faults() Faults

	// Diagnose writes a diagnostics bundle of every cluster (objects, events, Flux and operator
	// state and logs) under dir and returns the path of the bundle.
	Diagnose(ctx context.Context, dir string) (string, error)
	// Close tears the federation down.
	Close(ctx context.Context) error
}

// Git is the repository Flux delivers from.
type Git interface {
	// Commit writes the files in put and deletes the paths (files or directories) in remove,
	// in one commit, and returns the new revision as Flux reports it.
	Commit(ctx context.Context, message string, put map[string][]byte, remove []string) (string, error)
	// Dir is the directory of the repository whose subdirectories every cluster's Flux
	// applies, each through its own kustomization.yaml; a scenario owns one subdirectory.
	Dir() string
	// AppliedRevision is the revision cluster's Flux Kustomization last applied (empty when
	// none), and whether its last fetch from Git succeeded.
	AppliedRevision(ctx context.Context, cluster string) (revision string, fetchOK bool, err error)
	// RequestApply asks the cluster's Flux to apply the revision it last fetched again now,
	// as `flux reconcile kustomization` does, and returns the request's token.
	RequestApply(ctx context.Context, cluster string) (token string, err error)
	// ApplyHandled reports whether the cluster's Flux finished the apply asked for with
	// token, and whether that apply succeeded (with its message when it did not).
	ApplyHandled(ctx context.Context, cluster, token string) (handled, ready bool, message string, err error)
}

// Faults are the failures a scenario can inject, in the test bed's one vocabulary (the table
// testbed.FaultKinds): Stop puts a fault in effect for a cluster and Start ends it; each
// returns once that took effect. Scenarios inject them through Scenario.InjectFault. A bed may also have optional
// abilities (testbed.OperatorImpersonation), found by a type assertion.
type Faults interface {
	Stop(ctx context.Context, f testbed.Fault, cluster string) error
	Start(ctx context.Context, f testbed.Fault, cluster string) error
}

// HasCapability reports whether f has capability c.
func HasCapability(f Federation, c string) bool { return slices.Contains(f.Capabilities(), c) }

// CheckClusters fails unless the federation has exactly the clusters a feature names.
func CheckClusters(f Federation, want []string) error {
	have := f.Clusters()
	for _, c := range want {
		if !slices.Contains(have, c) {
			return fmt.Errorf("the feature names cluster %q but the federation has %v; use the names in scenarios/topology.yaml", c, have)
		}
	}
	if len(have) != len(want) {
		return fmt.Errorf("the feature names the clusters %v but the federation has %v", want, have)
	}
	return nil
}
