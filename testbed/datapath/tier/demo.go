package tier

import (
	"context"
	"fmt"
	"io"
	"path/filepath"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
)

// DemoCalls is how many calls each routing probe of the demo makes.
const DemoCalls = 60

// Demo tells the hermetic demo's story on real clusters, plus routing: the echo Workload and
// its global ServiceEndpoint are committed to Git; a client in the first cluster calls the
// global Service; the table shows which cluster answered how many calls; then the last
// cluster is stopped and the client calls again. Unless keep, it tears down at the end.
func (b *Bed) Demo(ctx context.Context, out io.Writer, keep bool) (err error) {
	say := func(format string, args ...any) { fmt.Fprintf(out, "\n"+format+"\n", args...) }
	top := b.state.Topology
	if len(top.Clusters) < 2 {
		return fmt.Errorf("the routing demo needs at least two clusters; the topology has %d", len(top.Clusters))
	}
	client, stopped := top.Clusters[0].Name, top.Clusters[len(top.Clusters)-1].Name
	say("▶ %d sovereign clusters, each with its own API server, Cilium, Flux and Polykube operator,\n  joined by Cilium ClusterMesh. No central control plane.", len(top.Clusters))
	if err := b.Up(ctx); err != nil {
		return err
	}
	defer func() {
		switch {
		case keep:
			say("The federation stays up. Tear it down with: polykube-testbed down --provider %s", top.Provider)
		case err != nil && b.opts.Retain:
			say("The demo failed; the federation stays up for debugging (--retain).")
		default:
			if derr := b.Down(context.WithoutCancel(ctx)); derr != nil && err == nil {
				err = derr
			}
		}
	}()

	say("▶ A developer commits the echo Workload (2 replicas in every cluster) and its global\n  ServiceEndpoint to Git. Every echo replica answers with the name of its cluster.")
	rev, err := testbed.CommitDir(ctx, b, filepath.Join(b.opts.SourceDir, "examples", "echo"), datapath.EchoName, "workloads: echo and its global ServiceEndpoint")
	if err != nil {
		return err
	}
	if err := datapath.WaitApplied(ctx, b.env, rev); err != nil {
		return err
	}
	if err := b.WaitDeployment(ctx, datapath.EchoNamespace, datapath.EchoName); err != nil {
		return err
	}

	say("▶ Each cluster's operator read the same Workload and runs only its own slice:")
	if err := b.printSlices(ctx, out); err != nil {
		return err
	}

	say("▶ A client in %s calls the global Service %s/%s %d times:", client, datapath.EchoNamespace, datapath.EchoName, DemoCalls)
	before, err := b.probe(ctx, out, client)
	if err != nil {
		return err
	}
	if err := CheckBefore(before, top.ClusterNames()); err != nil {
		return err
	}

	say("▶ %s goes dark: its nodes stop.", stopped)
	if err := b.prov.Stop(ctx, stopped); err != nil {
		return err
	}
	say("▶ The client in %s calls again:", client)
	after, err := b.probe(ctx, out, client)
	if err != nil {
		return err
	}
	if err := CheckAfter(after, top.ClusterNames(), stopped); err != nil {
		return err
	}
	say("  The clusters still up answer. Calls routed to %s's last-known backends fail until Cilium\n"+
		"  drops them: ClusterMesh keeps a disconnected cluster's backends (docs/datapath.md).", stopped)
	return nil
}

// probe calls the echo Service from a cluster and prints the tally; nil in a dry run.
func (b *Bed) probe(ctx context.Context, out io.Writer, cluster string) (*datapath.Tally, error) {
	answers, err := datapath.Call(ctx, b.env, cluster, datapath.EchoNamespace, datapath.EchoName, DemoCalls)
	if err != nil || b.opts.DryRun {
		return nil, err
	}
	t := datapath.Count(answers, b.state.Topology.ClusterNames())
	t.Print(out)
	return &t, nil
}

// CheckBefore is what the demo (and so `make e2e`) requires of the first probe: every call
// answered, and every cluster among the answers. A nil tally (dry run) passes.
func CheckBefore(t *datapath.Tally, clusters []string) error {
	if t == nil {
		return nil
	}
	if t.Unanswered > 0 {
		return fmt.Errorf("routing: %d of %d calls through the global Service got no answer with every cluster up", t.Unanswered, t.Total)
	}
	for _, c := range clusters {
		if t.Of(c) == 0 {
			return fmt.Errorf("routing: no call was answered by %s; ClusterMesh does not route to it (see `polykube-testbed logs --provider ...`)", c)
		}
	}
	return nil
}

// CheckAfter is what the demo requires once a cluster is stopped: every cluster still up
// keeps answering. Calls that land on the stopped cluster's last-known backends may fail.
func CheckAfter(t *datapath.Tally, clusters []string, stopped string) error {
	if t == nil {
		return nil
	}
	for _, c := range clusters {
		if c != stopped && t.Of(c) == 0 {
			return fmt.Errorf("routing: with %s stopped, no call was answered by %s, which is still up", stopped, c)
		}
	}
	if t.Of(stopped) > 0 {
		return fmt.Errorf("routing: %d calls were answered by %s, whose nodes are stopped", t.Of(stopped), stopped)
	}
	return nil
}

func joinKeys(m map[string][]byte) string {
	out := ""
	for i, k := range sortedKeys(m) {
		if i > 0 {
			out += ", "
		}
		out += k
	}
	return out
}

// printSlices prints, per cluster, the echo replicas its operator runs.
func (b *Bed) printSlices(ctx context.Context, out io.Writer) error {
	if !b.env.Runner.Note("read Deployment %s/%s in every cluster", datapath.EchoNamespace, datapath.EchoName) {
		return nil
	}
	for _, m := range b.env.Members {
		cl, err := b.env.Client(m)
		if err != nil {
			return err
		}
		var d appsv1.Deployment
		if err := cl.Get(ctx, client.ObjectKey{Namespace: datapath.EchoNamespace, Name: datapath.EchoName}, &d); err != nil {
			return fmt.Errorf("read the echo Deployment in %s: %w", m.Name, err)
		}
		fmt.Fprintf(out, "  %-20s %d/%d echo replicas ready\n", m.Name, d.Status.ReadyReplicas, ptrOr(d.Spec.Replicas, 1))
	}
	return nil
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
