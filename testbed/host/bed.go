package host

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/client-go/rest"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// refuseInClusterOptions is the host bed's answer to options only the in-cluster bed honours.
func refuseInClusterOptions(o testbed.BedOptions) error {
	var set []string
	for flag, on := range map[string]bool{"--dry-run": o.DryRun, "--images": o.Images != "", "--k0s-hosts": o.K0sHosts != "", "--git-listen": o.GitListen != ""} {
		if on {
			set = append(set, flag)
		}
	}
	if len(set) == 0 {
		return nil
	}
	slices.Sort(set)
	inCluster := provider.NamesAt(provider.AddonsInCluster)
	return fmt.Errorf("%s: only the %s providers (real nodes) take it; add %s, or drop it for %s",
		strings.Join(set, ", "), provider.Join(inCluster, "and", ""), provider.Join(inCluster, "or", "--provider "), cmp.Or(o.Provider, topology.ProviderKwok))
}

func init() {
	testbed.RegisterBed(provider.AddonsOnHost, func(o testbed.BedOptions) (testbed.Bed, error) {
		if err := refuseInClusterOptions(o); err != nil {
			return nil, err
		}
		tb, err := Open(Options{Topology: o.Topology, Run: o.Run, StateRoot: o.StateRoot, Log: o.Log, SourceDir: o.SourceDir, BuildTools: o.BuildTools})
		if err != nil {
			return nil, err
		}
		return Bed{Testbed: tb, up: UpOptions{Retain: o.Retain, SelfBinary: o.SelfBinary}}, nil
	})
}

// Bed is the Testbed as a testbed.Bed: the bed of placement host, as incluster.Bed is the
// bed of placement cluster.
type Bed struct {
	*Testbed
	up UpOptions
}

var (
	_ testbed.Bed                    = Bed{}
	_ testbed.OperatorImpersonation  = Bed{}
	_ testbed.MeshMirror             = Bed{}
	_ testbed.OperatorKubeconfigs    = Bed{}
	_ testbed.OperatorBinaries       = Bed{}
	_ testbed.OperatorReplicas       = Bed{}
	_ testbed.OperatorLeaderElection = Bed{}
	_ testbed.DemoStage              = Bed{}
	_ testbed.Fetcher                = Bed{}
)

// Up brings the run up, removing what it made if it fails (unless the bed was opened with
// Retain).
func (b Bed) Up(ctx context.Context) error { return b.Testbed.Up(ctx, b.up) }

// Kubeconfig is the cluster's admin kubeconfig and context, as the provider wrote them.
func (b Bed) Kubeconfig(cluster string) (string, string, error) {
	c, err := b.Cluster(cluster)
	if err != nil {
		return "", "", err
	}
	return c.Kubeconfig, c.Context, nil
}

// Capabilities are the provider's.
func (b Bed) Capabilities() []provider.Capability {
	p, err := b.Provider()
	if err != nil {
		return nil
	}
	return p.Capabilities()
}

// AdminConfig is the cluster's kubeconfig as the provider hands it out.
func (b Bed) AdminConfig(cluster string) (*rest.Config, error) {
	c, err := b.Cluster(cluster)
	if err != nil {
		return nil, err
	}
	return c.RESTConfig()
}

// OperatorConfig is the kubeconfig the cluster's operator process runs with.
func (b Bed) OperatorConfig(_ context.Context, cluster string) (*rest.Config, error) {
	path := b.OperatorKubeconfig(cluster)
	if path == "" {
		return nil, fmt.Errorf("the test bed runs no operator for cluster %q", cluster)
	}
	return provider.RESTConfig(path, "")
}

// Diagnose writes the run's diagnostics bundle.
func (b Bed) Diagnose(ctx context.Context, dir string) error { return b.CollectLogs(ctx, dir) }

// WaitSlices waits until the operator of each cluster of slices reconciled the Workload (on
// kwok no pod runs: the operator's status and the Deployment's replicas are the slice).
func (b Bed) WaitSlices(ctx context.Context, namespace, name string, slices map[string]int32) error {
	return b.WaitReconciled(ctx, namespace, name, testbed.SortedIn(b.Topology().ClusterNames(), slices)...)
}
