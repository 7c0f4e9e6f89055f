package harness

import (
	"context"
	"fmt"
	"io"
	"sync"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// RunName is the test-bed run the suite brings up and shares between its scenarios.
const RunName = "scenarios"

// openTestbed brings the topology up as the test-bed run "scenarios" (first tearing down one
// that an interrupted suite left behind) and adapts it to Federation.
func openTestbed(ctx context.Context, top *topology.Topology, log io.Writer) (Federation, error) {
	// A run left by a suite that was killed before its teardown: its Git history, namespaces
	// and faults would leak into this run, so it goes first (opened with its own topology).
	stale, err := testbed.Open(testbed.Options{Run: RunName, Log: log})
	if err != nil {
		return nil, fmt.Errorf("%w (remove it with `polykube-testbed down --run %s`)", err, RunName)
	}
	if stale.Exists() {
		fmt.Fprintf(log, "scenarios: tearing down the run %s left by an earlier suite (%s)\n", RunName, stale.Dir())
		if err := stale.Down(ctx); err != nil {
			return nil, fmt.Errorf("tear down the run left by an earlier suite: %w", err)
		}
	}
	tb, err := testbed.Open(testbed.Options{Topology: top, Run: RunName, Log: log})
	if err != nil {
		return nil, err
	}
	if err := tb.Up(ctx, testbed.UpOptions{}); err != nil {
		return nil, err
	}
	p, err := tb.Provider()
	if err != nil {
		return nil, err
	}
	return &testbedFederation{tb: tb, provider: p, clients: map[string]client.Client{}}, nil
}

type testbedFederation struct {
	tb       *testbed.Testbed
	provider provider.Provider

	mu      sync.Mutex
	clients map[string]client.Client
}

// client is the test bed's admin client of cluster, made once: a new client discovers the
// API again, which is most of the cost of a poll.
func (f *testbedFederation) client(cluster string) (client.Client, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.clients[cluster]; ok {
		return c, nil
	}
	c, err := f.tb.Client(cluster)
	if err != nil {
		return nil, err
	}
	f.clients[cluster] = c
	return c, nil
}

func (f *testbedFederation) Provider() string { return f.provider.Name() }

func (f *testbedFederation) Capabilities() []string {
	var out []string
	for _, c := range f.provider.Capabilities() {
		out = append(out, string(c))
	}
	return out
}

func (f *testbedFederation) Clusters() []string { return f.tb.Topology().ClusterNames() }

func (f *testbedFederation) AdminConfig(cluster string) (*rest.Config, error) {
	c, err := f.tb.Cluster(cluster)
	if err != nil {
		return nil, err
	}
	return c.RESTConfig()
}

func (f *testbedFederation) OperatorConfig(cluster string) (*rest.Config, error) {
	path := f.tb.OperatorKubeconfig(cluster)
	if path == "" {
		return nil, fmt.Errorf("the test bed runs no operator for cluster %q", cluster)
	}
	return provider.RESTConfig(path, "")
}

func (f *testbedFederation) Git() Git       { return fluxGit{commit: f.tb.Commit, client: f.client} }
func (f *testbedFederation) Faults() Faults { return testbedFaults{f.tb} }

func (f *testbedFederation) Diagnose(ctx context.Context, dir string) (string, error) {
	return dir, f.tb.CollectLogs(ctx, dir)
}

func (f *testbedFederation) Close(ctx context.Context) error { return f.tb.Down(ctx) }

type testbedFaults struct{ tb *testbed.Testbed }

func (t testbedFaults) StopAPIServer(ctx context.Context, cluster string) error {
	return t.tb.Break(ctx, testbed.FaultAPIServer, cluster)
}
func (t testbedFaults) StartAPIServer(ctx context.Context, cluster string) error {
	return t.tb.Repair(ctx, testbed.FaultAPIServer, cluster)
}
func (t testbedFaults) KillOperator(ctx context.Context, cluster string) error {
	return t.tb.Break(ctx, testbed.FaultOperator, cluster)
}
func (t testbedFaults) RestartOperator(ctx context.Context, cluster string) error {
	return t.tb.Repair(ctx, testbed.FaultOperator, cluster)
}
func (t testbedFaults) StartOperatorAs(ctx context.Context, cluster, clusterName string) (string, error) {
	return t.tb.StartOperatorAs(ctx, cluster, clusterName)
}
func (t testbedFaults) StopGit(ctx context.Context) error {
	return t.tb.Break(ctx, testbed.FaultGit, "")
}
func (t testbedFaults) StartGit(ctx context.Context) error {
	return t.tb.Repair(ctx, testbed.FaultGit, "")
}
