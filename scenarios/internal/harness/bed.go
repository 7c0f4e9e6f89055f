package harness

import (
	"context"
	"fmt"
	"io"

	"k8s.io/client-go/rest"

	"github.com/polykube/polykube/testbed"
	// The beds register themselves with testbed.OpenBed: the host bed
	// (kwok, existing) and the in-cluster bed (kind, k0s, existing).
	_ "github.com/polykube/polykube/testbed/host"
	_ "github.com/polykube/polykube/testbed/incluster"
	"github.com/polykube/polykube/testbed/topology"
)

// RunName is the test-bed run the suite brings up and shares between its scenarios.
const RunName = "scenarios"

// openBed brings the topology up as the run "scenarios" on the bed its topology's placement names
// (the host bed for kwok, the in-cluster bed for kind and k0s), first tearing down one that an
// interrupted suite left behind, and adapts it to Federation.
func openBed(ctx context.Context, top *topology.Topology, log io.Writer) (Federation, error) {
	opts := testbed.BedOptions{Provider: top.Provider, Run: RunName, Log: log}
	down := fmt.Sprintf("polykube-testbed down --run %s", RunName) + testbed.ProviderFlag(top)
	// A run left by a suite that was killed before its teardown: its Git history, namespaces
	// and faults would leak into this run, so it goes first (opened with its own topology).
	stale, err := testbed.OpenBed(opts)
	if err != nil {
		return nil, fmt.Errorf("%w (remove it with `%s`)", err, down)
	}
	if stale.Exists() {
		fmt.Fprintf(log, "scenarios: tearing down the run %s left by an earlier suite\n", RunName)
		if err := stale.Down(ctx); err != nil {
			return nil, fmt.Errorf("tear down the run left by an earlier suite: %w (remove it with `%s`)", err, down)
		}
	}
	opts.Topology = top
	b, err := testbed.OpenBed(opts)
	if err != nil {
		return nil, err
	}
	if err := b.Up(ctx); err != nil {
		return nil, err
	}
	return newBedFederation(b), nil
}

// bedFederation is the Federation of any test-bed Bed; where the bed has a datapath (kind,
// k0s with Cilium ClusterMesh) it is a Datapath too.
type bedFederation struct {
	bed     testbed.Bed
	clients *Clients
}

func newBedFederation(b testbed.Bed) *bedFederation {
	f := &bedFederation{bed: b}
	f.clients = NewClients(f)
	return f
}

var _ Federation = (*bedFederation)(nil)

func (f *bedFederation) Provider() string { return f.bed.Topology().Provider }

func (f *bedFederation) Capabilities() []string {
	var out []string
	for _, c := range f.bed.Capabilities() {
		out = append(out, string(c))
	}
	return out
}

func (f *bedFederation) Clusters() []string { return f.bed.Topology().ClusterNames() }

func (f *bedFederation) AdminConfig(cluster string) (*rest.Config, error) {
	return f.bed.AdminConfig(cluster)
}

func (f *bedFederation) OperatorConfig(cluster string) (*rest.Config, error) {
	return f.bed.OperatorConfig(context.Background(), cluster)
}

// Git commits through the bed, which then asks every reachable cluster's Flux to fetch now
// rather than at its interval. A cluster that is down is skipped: its Flux catches up.
func (f *bedFederation) Git() Git {
	return deliveryGit(f.bed.Topology(), fluxGit{commit: f.bed.Commit, client: f.clients.Admin})
}

// Faults are the bed's: Stop and Start of one vocabulary (testbed.Fault), and the optional
// abilities it has (testbed.OperatorImpersonation).
func (f *bedFederation) Faults() Faults { return f.bed }

func (f *bedFederation) Diagnose(ctx context.Context, dir string) (string, error) {
	return dir, f.bed.Diagnose(ctx, dir)
}

func (f *bedFederation) Close(ctx context.Context) error { return f.bed.Down(ctx) }

// datapath is the bed's datapath, when it has one.
func (f *bedFederation) datapath() (Datapath, bool) {
	d, ok := f.bed.(Datapath)
	return d, ok
}
