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

// refuseDatapathOptions is the hermetic beds' answer to options only the datapath beds honour.
func refuseDatapathOptions(o testbed.BedOptions) error {
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
		if err := refuseDatapathOptions(o); err != nil {
			return nil, err
		}
		tb, err := Open(Options{Topology: o.Topology, Run: o.Run, StateRoot: o.StateRoot, Log: o.Log, SourceDir: o.SourceDir, BuildTools: o.BuildTools})
		if err != nil {
			return nil, err
		}
		return HermeticBed{Testbed: tb, up: UpOptions{Retain: o.Retain, SelfBinary: o.SelfBinary}}, nil
	})
}

// HermeticBed is the Testbed as a Bed.
type HermeticBed struct {
	*Testbed
	up UpOptions
}

var (
	_ testbed.Bed                    = HermeticBed{}
	_ testbed.OperatorImpersonation  = HermeticBed{}
	_ testbed.MeshMirror             = HermeticBed{}
	_ testbed.OperatorKubeconfigs    = HermeticBed{}
	_ testbed.OperatorBinaries       = HermeticBed{}
	_ testbed.OperatorReplicas       = HermeticBed{}
	_ testbed.OperatorLeaderElection = HermeticBed{}
	_ testbed.DemoStage              = HermeticBed{}
	_ testbed.Fetcher                = HermeticBed{}
)

// Up brings the run up, removing what it made if it fails (unless the bed was opened with
// Retain).
func (b HermeticBed) Up(ctx context.Context) error { return b.Testbed.Up(ctx, b.up) }

// Kubeconfig is the cluster's admin kubeconfig and context, as the provider wrote them.
func (b HermeticBed) Kubeconfig(cluster string) (string, string, error) {
	c, err := b.Cluster(cluster)
	if err != nil {
		return "", "", err
	}
	return c.Kubeconfig, c.Context, nil
}

// Capabilities are the provider's.
func (b HermeticBed) Capabilities() []provider.Capability {
	p, err := b.Provider()
	if err != nil {
		return nil
	}
	return p.Capabilities()
}

// AdminConfig is the cluster's kubeconfig as the provider hands it out.
func (b HermeticBed) AdminConfig(cluster string) (*rest.Config, error) {
	c, err := b.Cluster(cluster)
	if err != nil {
		return nil, err
	}
	return c.RESTConfig()
}

// OperatorConfig is the kubeconfig the cluster's operator process runs with.
func (b HermeticBed) OperatorConfig(_ context.Context, cluster string) (*rest.Config, error) {
	path := b.OperatorKubeconfig(cluster)
	if path == "" {
		return nil, fmt.Errorf("the test bed runs no operator for cluster %q", cluster)
	}
	return provider.RESTConfig(path, "")
}

// Diagnose writes the run's diagnostics bundle.
func (b HermeticBed) Diagnose(ctx context.Context, dir string) error { return b.CollectLogs(ctx, dir) }

// WaitSlices waits until the operator of each cluster of slices reconciled the Workload (on
// kwok no pod runs: the operator's status and the Deployment's replicas are the slice).
func (b HermeticBed) WaitSlices(ctx context.Context, namespace, name string, slices map[string]int32) error {
	return b.WaitReconciled(ctx, namespace, name, testbed.SortedIn(b.Topology().ClusterNames(), slices)...)
}
