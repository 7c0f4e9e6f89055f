package host

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/pipeline"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// Options configure a test bed.
type Options struct {
	// Topology is what to bring up. Nil means the run's recorded topology, else the default.
	Topology *topology.Topology
	// StateRoot holds one directory per run; "" means DefaultStateRoot().
	StateRoot string
	// Run names the run; "" means the topology's name.
	Run string
	// SourceDir is the Polykube checkout (for the operator base, the CRDs and building the
	// operator); "" means the checkout containing the working directory.
	SourceDir string
	// Toolchain resolves the pinned binaries; nil means toolchain.New with BuildTools.
	Toolchain *toolchain.Toolchain
	// BuildTools builds missing toolchain binaries (minutes on a cold machine) instead of
	// failing with a pointer to `make tools`.
	BuildTools bool
	// Log receives the status lines; nil means os.Stderr.
	Log io.Writer
}

// State is what a run records in state.json.
type State struct {
	Topology *topology.Topology `json:"topology"`
	// Binaries maps each tool to the binary the run uses.
	Binaries map[string]string        `json:"binaries,omitempty"`
	Git      GitState                 `json:"git,omitempty"`
	Clusters map[string]*ClusterState `json:"clusters,omitempty"`
	Operator OperatorState            `json:"operator,omitempty"`
	// MeshMirror records the mesh-mirror add-on.
	MeshMirror MeshMirrorState `json:"meshMirror,omitzero"`
	// Registry records the registry add-on.
	Registry RegistryState `json:"registry,omitzero"`
}

// GitState records the Git server.
type GitState struct {
	Addr string `json:"addr,omitempty"`
	// Seeded is the revision of the initial commit.
	Seeded string `json:"seeded,omitempty"`
}

// ClusterState records one cluster and its add-on processes.
type ClusterState struct {
	Kubeconfig string      `json:"kubeconfig"`
	Context    string      `json:"context"`
	Flux       FluxPorts   `json:"flux,omitempty"`
	ArgoCD     ArgoCDPorts `json:"argocd,omitzero"`
	Operator   OpState     `json:"operator,omitempty"`
	// Prometheus is the loopback port of the cluster's Prometheus (the prometheus add-on).
	Prometheus int `json:"prometheus,omitempty"`
}

// FluxPorts are the loopback ports of a cluster's Flux controllers.
type FluxPorts struct {
	SourceMetrics, SourceHealth, SourceStorage, KustomizeMetrics, KustomizeHealth int
}

// OpState records a cluster's operator process.
type OpState struct {
	Metrics, Health int
	// Kubeconfig holds the operator's ServiceAccount token for this cluster only.
	Kubeconfig string `json:"kubeconfig,omitempty"`
	// Binary is the operator binary this cluster runs when it is not the run's own
	// (OperatorState.Binary): set by UseOperator, as an upgrade moves one cluster at a time.
	Binary string `json:"binary,omitempty"`
	// LeaderElect runs the operator with leader election (SetOperatorLeaderElection).
	LeaderElect bool `json:"leaderElect,omitempty"`
}

// OperatorState records what the operator add-on found in the operator base.
type OperatorState struct {
	Binary         string                 `json:"binary,omitempty"`
	Deployment     gitrepo.OperatorObject `json:"deployment"`
	ServiceAccount gitrepo.OperatorObject `json:"serviceAccount"`
}

// Testbed is one run: its state directory, provider and processes.
type Testbed struct {
	opts     Options
	dir      string
	log      io.Writer
	mu       sync.Mutex
	state    *State
	provider provider.Provider
	procs    proc.Dir
	// Phases records how long each step of the last Up took, in order.
	Phases []Phase
}

// Phase is one timed step of Up.
type Phase = pipeline.Phase

// Open finds or prepares the run's state directory. It creates nothing else.
func Open(opts Options) (*Testbed, error) {
	if opts.Log == nil {
		opts.Log = os.Stderr
	}
	if opts.StateRoot == "" {
		root, err := testbed.DefaultStateRoot()
		if err != nil {
			return nil, err
		}
		opts.StateRoot = root
	}
	run := opts.Run
	if run == "" && opts.Topology != nil {
		run = opts.Topology.Name
	}
	if run == "" {
		run = topology.Default().Name
	}
	tb := &Testbed{opts: opts, dir: filepath.Join(opts.StateRoot, run), log: opts.Log}
	tb.procs = proc.Dir(filepath.Join(tb.dir, "procs"))
	st, err := tb.readState()
	if err != nil {
		return nil, err
	}
	switch {
	case st != nil && opts.Topology != nil && !sameTopology(st.Topology, opts.Topology):
		return nil, fmt.Errorf("run %q is already up with a different topology; run `polykube-testbed down --run %s` first or pick another --run", run, run)
	case st != nil:
		tb.state = st
	default:
		top := opts.Topology
		if top == nil {
			top = topology.Default()
		}
		tb.state = &State{Topology: top, Clusters: map[string]*ClusterState{}, Binaries: map[string]string{}}
	}
	return tb, nil
}

func sameTopology(a, b *topology.Topology) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}

// Dir is the run's state directory.
func (tb *Testbed) Dir() string { return tb.dir }

// Topology is the run's topology.
func (tb *Testbed) Topology() *topology.Topology { return tb.state.Topology }

// Exists reports whether the run has been brought up (even partly).
func (tb *Testbed) Exists() bool {
	_, err := os.Stat(filepath.Join(tb.dir, "state.json"))
	return err == nil
}

func (tb *Testbed) readState() (*State, error) {
	st, err := testbed.ReadRecorded[State](filepath.Join(tb.dir, "state.json"))
	var unreadable *fs.PathError
	if errors.As(err, &unreadable) {
		return nil, err // a file the OS would not give us (permissions, I/O): removing the run is no cure
	}
	if err != nil {
		return nil, fmt.Errorf("%w (remove the run with `polykube-testbed down --all`)", err)
	}
	if st == nil {
		return nil, nil
	}
	if st.Topology == nil {
		return nil, fmt.Errorf("%s records no topology", filepath.Join(tb.dir, "state.json"))
	}
	if st.Clusters == nil {
		st.Clusters = map[string]*ClusterState{}
	}
	if st.Binaries == nil {
		st.Binaries = map[string]string{}
	}
	return st, nil
}

func (tb *Testbed) saveState() error {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if err := os.MkdirAll(tb.dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(tb.state, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(tb.dir, "state.json.tmp")
	if err := os.WriteFile(tmp, data, 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, filepath.Join(tb.dir, "state.json"))
}

func (tb *Testbed) wait(name string) topology.Wait { return tb.state.Topology.Wait(name) }

// sourceDir is the Polykube checkout.
func (tb *Testbed) sourceDir() (string, error) {
	if tb.opts.SourceDir != "" {
		return gobuild.FindRoot(tb.opts.SourceDir)
	}
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	return gobuild.FindRoot(wd)
}

func (tb *Testbed) toolchain() (*toolchain.Toolchain, error) {
	if tb.opts.Toolchain != nil {
		return tb.opts.Toolchain, nil
	}
	return toolchain.New(toolchain.Options{Build: tb.opts.BuildTools, Log: tb.log})
}

// resolveTools resolves tool groups into state.Binaries.
func (tb *Testbed) resolveTools(ctx context.Context, groups ...string) error {
	tc, err := tb.toolchain()
	if err != nil {
		return err
	}
	resolved, err := tc.ResolveAll(ctx, groups...)
	if err != nil {
		if errors.Is(err, toolchain.ErrMissing) {
			return fmt.Errorf("%w\n(the test bed never downloads: run `make tools` first, or `polykube-testbed up --build-tools`)", err)
		}
		return err
	}
	tb.mu.Lock()
	for _, r := range resolved {
		tb.state.Binaries[r.Name] = r.Path
	}
	tb.mu.Unlock()
	return nil
}

// Provider returns the run's provider.
func (tb *Testbed) Provider() (provider.Provider, error) {
	if tb.provider != nil {
		return tb.provider, nil
	}
	reg, err := provider.Lookup(tb.state.Topology.Provider)
	if err != nil {
		return nil, err
	}
	if pl, err := provider.PlacementOf(tb.state.Topology); err != nil || pl != provider.AddonsOnHost {
		return nil, fmt.Errorf("provider %s: %w by this bed, which runs the add-ons as host processes; the in-cluster bed runs them in its clusters (polykube-testbed up --provider %[1]s)",
			reg.Name, provider.ErrNotSupported)
	}
	p, err := reg.New(provider.Setup{
		Options: provider.Options{Dir: filepath.Join(tb.dir, "clusters"), Topology: tb.state.Topology, Log: tb.log},
		Tools:   tb.state.Binaries, Runner: execx.Exec{Log: tb.log},
	})
	if err != nil {
		return nil, err
	}
	tb.provider = p
	return tb.provider, nil
}

// Cluster returns a cluster of the run, as its provider hands it out.
func (tb *Testbed) Cluster(name string) (*provider.Cluster, error) {
	cs, ok := tb.state.Clusters[name]
	if !ok {
		if tb.state.Topology.Cluster(name) == nil {
			return nil, fmt.Errorf("no cluster %q in run %s (clusters: %s)", name, filepath.Base(tb.dir), strings.Join(tb.state.Topology.ClusterNames(), ", "))
		}
		return nil, fmt.Errorf("cluster %s of run %s is not up: run `polykube-testbed up`", name, filepath.Base(tb.dir))
	}
	return &provider.Cluster{Name: name, Kubeconfig: cs.Kubeconfig, Context: cs.Context}, nil
}

// Client returns an admin client for a cluster.
func (tb *Testbed) Client(name string) (client.Client, error) {
	cl, err := tb.Cluster(name)
	if err != nil {
		return nil, err
	}
	cfg, err := cl.RESTConfig()
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 10 * time.Second
	return client.New(cfg, client.Options{Scheme: testbed.Scheme})
}

// GitURL is the clone URL of the served repository ("" before it serves).
func (tb *Testbed) GitURL() string { return gitrepo.URL(tb.state.Git.Addr) }

// forEachCluster runs fn for every cluster concurrently and joins the errors.
func (tb *Testbed) forEachCluster(fn func(c topology.Cluster) error) error {
	var wg sync.WaitGroup
	errs := make([]error, len(tb.state.Topology.Clusters))
	for i, c := range tb.state.Topology.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(c); err != nil {
				errs[i] = fmt.Errorf("%s: %w", c.Name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}
