package incluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
)

// ciliumStatus asks every Cilium agent of a member for its status (cilium-dbg status --verbose,
// ClusterMesh included) and writes the answers to file: no cilium CLI needed.
func (b *Bed) ciliumStatus(ctx context.Context, m datapath.Member, file string) error {
	if !b.env.Runner.Note("write cilium-dbg status --verbose of every agent in %s to %s", m.Context, file) {
		return nil
	}
	cl, err := b.env.Client(m)
	if err != nil {
		return err
	}
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(datapath.CiliumNamespace), client.MatchingLabels{datapath.CiliumAgentPodLabel: datapath.CiliumAgentPodLabelV}); err != nil {
		return fmt.Errorf("list Cilium agents in %s: %w", m.Name, err)
	}
	var out []byte
	for _, p := range pods.Items {
		got, err := datapath.Exec(ctx, m, datapath.CiliumNamespace, p.Name, "cilium-agent", "cilium-dbg", "status", "--verbose")
		out = append(out, fmt.Sprintf("=== %s\n", p.Name)...)
		out = append(out, got...)
		if err != nil {
			out = append(out, []byte("\n"+err.Error()+"\n")...)
		}
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return err
	}
	return os.WriteFile(file, out, 0o644)
}

// logCollector is implemented by providers that can export their nodes' logs (kind).
type logCollector interface {
	CollectLogs(cluster, dir string) error
}

// Diagnose writes a diagnostics bundle of every cluster under dir: the nodes' logs (kind),
// Cilium and ClusterMesh status, Flux objects and controller logs, the operator's and the
// echo workload's objects, and the Git server's log. It collects what it can and reports
// what it could not, without stopping at the first failure.
func (b *Bed) Diagnose(ctx context.Context, dir string) error {
	var errs []error
	keep := func(err error) {
		if err != nil {
			errs = append(errs, err)
		}
	}
	e := b.env
	capture := func(file string, c execx.Cmd) {
		out, err := e.Runner.Run(ctx, c)
		if e.Runner.DryRun() {
			return
		}
		if err != nil {
			out = append(out, []byte("\n"+err.Error()+"\n")...)
		}
		keep(os.MkdirAll(filepath.Dir(file), 0o755))
		keep(os.WriteFile(file, out, 0o644))
	}
	for _, m := range e.Members {
		cdir := filepath.Join(dir, m.Name)
		if lc, ok := b.prov.(logCollector); ok {
			keep(lc.CollectLogs(m.Name, filepath.Join(cdir, "nodes")))
		}
		withKC := func(path string, args ...string) execx.Cmd {
			return execx.Cmd{Path: path, Args: args, Env: []string{e.KubeconfigEnv()}}
		}
		keep(b.ciliumStatus(ctx, m, filepath.Join(cdir, "cilium-status.txt")))
		capture(filepath.Join(cdir, "flux-get-all.txt"), withKC("flux", "get", "all", "--all-namespaces", "--context", m.Context))
		capture(filepath.Join(cdir, "flux-logs.txt"), withKC("flux", "logs", "--all-namespaces", "--context", m.Context))
		capture(filepath.Join(cdir, "flux-events.txt"), withKC("flux", "events", "--all-namespaces", "--context", m.Context))
	}
	if e.Runner.Note("copy the Git server's log %s into %s", b.procs.LogPath(gitProc), dir) {
		if data, err := os.ReadFile(b.procs.LogPath(gitProc)); err == nil {
			keep(os.WriteFile(filepath.Join(dir, "git-server.log"), data, 0o644))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("diagnostics are incomplete: %w", err)
	}
	return nil
}
