package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"syscall"
	"time"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/pipeline"
	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// UpOptions tune Up.
type UpOptions struct {
	// Retain keeps what was created when Up fails (or is interrupted), for debugging.
	// Without it a failed Up removes the run.
	Retain bool
	// SelfBinary is a polykube-testbed binary that runs the Git server (`serve-git`); ""
	// means building ./testbed/cmd/polykube-testbed from the checkout.
	SelfBinary string
}

// minFreeBytes is the disk space Up wants in the state directory (etcd, logs, Flux storage).
const minFreeBytes = 2 << 30

// Up brings the run up: clusters, then each add-on of the topology in order. It is
// idempotent: what is up already is checked and kept. When it fails, or ctx is cancelled
// (Ctrl-C), while creating a new run, it removes the run unless opts.Retain is set; a run
// that existed before is kept.
func (tb *Testbed) Up(ctx context.Context, opts UpOptions) (err error) {
	tb.Phases = nil
	existed := tb.Exists()
	defer func() {
		if err == nil {
			return
		}
		if ctx.Err() != nil && !errors.Is(err, ctx.Err()) {
			// A step killed by the cancellation reports how it died; say why it was killed.
			err = fmt.Errorf("interrupted: %w", errors.Join(context.Cause(ctx), err))
		}
		if existed {
			fmt.Fprintf(tb.log, "Up failed on a run that was already there; keeping it (`polykube-testbed down --run %s` removes it).\n", filepath.Base(tb.dir))
			return
		}
		if opts.Retain {
			fmt.Fprintf(tb.log, "Keeping the run for debugging (--retain): %s\nRemove it with `polykube-testbed down --run %s`.\n", tb.dir, filepath.Base(tb.dir))
			return
		}
		fmt.Fprintf(tb.log, "Up failed; removing the run (use --retain to keep it).\n")
		// A fresh context: ctx may be the one that was cancelled.
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
		defer cancel()
		if derr := tb.Down(dctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("clean up after the failure: %w", derr))
		}
	}()

	steps := &pipeline.Steps{Out: tb.log}
	defer func() { tb.Phases = steps.Phases }()
	if err := steps.Run(tb.actions(ctx, opts)); err != nil {
		return err
	}
	return tb.saveState()
}

// actions are the steps of Up, in order: the prerequisites, the clusters, then each add-on
// the topology lists (the same pipeline the in-cluster bed runs, with its own actions).
func (tb *Testbed) actions(ctx context.Context, opts UpOptions) []pipeline.Action {
	top := tb.state.Topology
	return []pipeline.Action{
		{What: "Checking prerequisites", Run: func() error {
			if err := tb.preflight(ctx); err != nil {
				return err
			}
			return tb.saveState()
		}},
		{What: fmt.Sprintf("Creating %d %s clusters", len(top.Clusters), top.Provider), Run: func() error {
			p, err := tb.Provider()
			if err != nil {
				return err
			}
			return tb.createClusters(ctx, p)
		}},
		{What: fmt.Sprintf("Starting the OCI registry (plain HTTP on %s)", top.Registry.Address),
			Run: func() error { return tb.upRegistry(ctx) }, Skip: !top.HasAddon(topology.AddonRegistry)},
		{What: "Starting Git server", Run: func() error { return tb.upGit(ctx, opts.SelfBinary) }, Skip: !top.HasAddon(topology.AddonGit)},
		{What: "Installing Flux", Run: func() error { return tb.upFlux(ctx) }, Skip: !top.HasAddon(topology.AddonFlux)},
		{What: argoCDStep(top), Run: func() error { return tb.upArgoCD(ctx) }, Skip: !top.HasAddon(topology.AddonArgoCD)},
		{What: "Starting operators", Run: func() error { return tb.upOperators(ctx) }, Skip: !top.HasAddon(topology.AddonOperator)},
		{What: fmt.Sprintf("Starting the mesh mirror, standing in for Cilium's endpoint-slice synchronisation on %s (every %s, cache TTL %s)",
			top.Provider, top.MeshMirror.Interval.Duration, top.MeshMirror.CacheTTL.Duration),
			Run: func() error { return tb.upMeshMirror(ctx, opts.SelfBinary) }, Skip: !top.HasAddon(topology.AddonMeshMirror)},
		{What: "Starting Prometheus (scraping each operator with the metrics reader's token, the alert rules of gitops/monitoring loaded)",
			Run: func() error { return tb.upPrometheus(ctx) }, Skip: !top.HasAddon(topology.AddonPrometheus)},
	}
}

// preflight checks disk space and resolves the binaries, so a missing tool fails before
// anything is created.
func (tb *Testbed) preflight(ctx context.Context) error {
	if err := os.MkdirAll(tb.dir, 0o755); err != nil {
		return fmt.Errorf("create the state directory: %w", err)
	}
	var fs syscall.Statfs_t
	if err := syscall.Statfs(tb.dir, &fs); err == nil {
		if free := fs.Bavail * uint64(fs.Bsize); free < minFreeBytes {
			return fmt.Errorf("only %d MiB free in %s; the test bed needs %d MiB (free some space or use --state-dir)", free>>20, tb.dir, minFreeBytes>>20)
		}
	}
	top := tb.state.Topology
	reg, err := provider.Lookup(top.Provider)
	if err != nil {
		return err
	}
	groups := slices.Clone(reg.ToolGroups)
	if top.HasAddon(topology.AddonFlux) {
		groups = append(groups, "flux")
	}
	if top.HasAddon(topology.AddonArgoCD) {
		if _, err := exec.LookPath("redis-server"); err != nil {
			return errNoRedis
		}
		groups = append(groups, "argocd")
	}
	if top.HasAddon(topology.AddonPrometheus) {
		groups = append(groups, "prometheus")
	}
	if top.HasAddon(topology.AddonRegistry) {
		groups = append(groups, "registry")
	}
	if len(groups) > 0 {
		if err := tb.resolveTools(ctx, groups...); err != nil {
			return err
		}
	}
	if top.HasAddon(topology.AddonGit) {
		if _, err := tb.sourceDir(); err != nil {
			return err
		}
	}
	// Ports recorded by an earlier run must still be ours or free.
	for name, cs := range tb.state.Clusters {
		if _, running := tb.procs.Running(name + "-operator"); !running && cs.Operator.Health != 0 && ports.InUse(cs.Operator.Health) {
			return fmt.Errorf("port %d recorded for the operator of %s is taken by another program; run `polykube-testbed down` and up again", cs.Operator.Health, name)
		}
	}
	return nil
}

// createClusters creates the clusters, at most three at a time (each with its own ports and
// work directory, so concurrent creation is safe).
func (tb *Testbed) createClusters(ctx context.Context, p provider.Provider) error {
	sem := make(chan struct{}, 3)
	return tb.forEachCluster(func(c topology.Cluster) error {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
		defer func() { <-sem }()
		cl, err := p.Create(ctx, c)
		if err != nil {
			return err
		}
		tb.mu.Lock()
		cs := tb.state.Clusters[c.Name]
		if cs == nil {
			cs = &ClusterState{}
			tb.state.Clusters[c.Name] = cs
		}
		cs.Kubeconfig, cs.Context = cl.Kubeconfig, cl.Context
		tb.mu.Unlock()
		return tb.saveState()
	})
}

// gitProc is the process name of the Git server.
const gitProc = "git-server"

func (tb *Testbed) gitRoot() string { return filepath.Join(tb.dir, "git") }

// upGit starts the Git server process and seeds the repository.
func (tb *Testbed) upGit(ctx context.Context, self string) error {
	src, err := tb.sourceDir()
	if err != nil {
		return err
	}
	if self, err = tb.selfBinary(ctx, self); err != nil {
		return err
	}
	if tb.state.Git.Addr == "" {
		p, err := ports.Free(1)
		if err != nil {
			return err
		}
		tb.state.Git.Addr = fmt.Sprintf("127.0.0.1:%d", p[0])
	}
	if err := gitrepo.InitBare(tb.gitRoot()); err != nil {
		return err
	}
	spec := proc.Spec{
		Name:      gitProc,
		Path:      self,
		Args:      []string{"serve-git", "--root", tb.gitRoot(), "--listen", tb.state.Git.Addr},
		HealthURL: "http://" + tb.state.Git.Addr + "/healthz",
	}
	if err := tb.startProc(ctx, spec); err != nil {
		return err
	}
	if err := tb.saveState(); err != nil {
		return err
	}
	seed, err := tb.render(src)
	if err != nil {
		return err
	}
	rev, err := gitrepo.Commit(ctx, tb.GitURL(), gitrepo.Change{Put: seed.Files, Message: "testbed: operator base, cluster entry points and roster of " + tb.state.Topology.Name})
	if err != nil {
		return err
	}
	tb.state.Git.Seeded = rev
	tb.state.Operator.Deployment, tb.state.Operator.ServiceAccount = seed.Deployment, seed.ServiceAccount
	return tb.saveState()
}

// selfBinary is the polykube-testbed binary that runs the test bed's own processes (the Git
// server, the mesh mirror): self when given, else one built from the checkout.
func (tb *Testbed) selfBinary(ctx context.Context, self string) (string, error) {
	if self != "" {
		return self, nil
	}
	src, err := tb.sourceDir()
	if err != nil {
		return "", err
	}
	return gobuild.Build(ctx, src, "./testbed/cmd/polykube-testbed", tb.binDir())
}

// render renders the initial repository; without the operator add-on the operator base is
// left out (and a missing gitops/operator is no error).
func (tb *Testbed) render(src string) (*gitrepo.Seed, error) {
	sources := gitrepo.SourcesIn(src)
	if !tb.state.Topology.HasAddon(topology.AddonOperator) {
		sources.OperatorBase = ""
	}
	return gitrepo.Render(tb.state.Topology, sources)
}

// startProc starts a process (unless running) and waits until its health URL answers 200.
func (tb *Testbed) startProc(ctx context.Context, spec proc.Spec) error {
	if _, err := tb.procs.Start(spec); err != nil {
		return err
	}
	return tb.waitHealthy(ctx, spec.Name, spec.HealthURL)
}

func (tb *Testbed) waitHealthy(ctx context.Context, name, url string) error {
	if url == "" {
		return nil
	}
	answers := wait.HTTPOK(url)
	return wait.For(ctx, tb.wait(topology.WaitProcess), name+" to answer "+url, func(ctx context.Context) error {
		if _, ok := tb.procs.Running(name); !ok {
			return wait.Stop(fmt.Errorf("%s exited; see its log %s", name, tb.procs.LogPath(name)))
		}
		return answers(ctx)
	})
}

// binary returns a resolved toolchain binary of the run.
func (tb *Testbed) binary(name string) (string, error) {
	if p := tb.state.Binaries[name]; p != "" {
		return p, nil
	}
	return "", fmt.Errorf("%s is not resolved for this run: run `polykube-testbed up` (and `make tools` if it is missing)", name)
}

// binDir is where the programs built from the checkout are kept: beside the toolchain
// cache, so they survive runs (they are named by content).
func (tb *Testbed) binDir() string {
	if tc, err := tb.toolchain(); err == nil {
		return filepath.Join(tc.CacheDir(), "testbed-bin")
	}
	return filepath.Join(tb.opts.StateRoot, ".bin")
}

// argoCDStep is the status line of the Argo CD add-on, which says which shape runs.
func argoCDStep(top *topology.Topology) string {
	if top.Delivery == topology.DeliveryArgoCDCentral {
		return fmt.Sprintf("Installing Argo CD (one hub beside %s: application-, applicationset-controller, repo-server and Redis, with the ApplicationSet of %s over every cluster)", top.ArgoCDHub(""), testbed.ExampleApplicationSet)
	}
	return "Installing Argo CD (an application-controller, repo-server and Redis per cluster, each delivering to its own cluster)"
}
