package tier

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// DemoCalls is how many calls each routing probe of the demo makes.
const DemoCalls = 60

// demoRouted bounds each wait of the story for the calls to reach what the mesh should route
// them to: ClusterMesh's sync after a commit, Cilium dropping a stopped cluster's backends
// (about 2 minutes here), a restarted cluster's endpoints coming back.
var demoRouted = topology.Wait{Timeout: topology.Duration{Duration: 6 * time.Minute}, Interval: topology.Duration{Duration: 5 * time.Second}}

// Demo tells the article's story on real clusters, with real traffic: billing-api, 6 replicas
// in AWS and 4 in GCP, is committed to Git; a client on-prem (no replica there) calls its
// global Service and is answered by both; GCP's nodes stop: the calls go to AWS only and
// polykube-status marks GCP unreachable; GCP comes back: the calls reach it again. Every
// probe is repeated, within a bounded time, until the mesh routes as it should, and the story
// fails when it does not. Unless keep, it tears down at the end.
func (b *Bed) Demo(ctx context.Context, out io.Writer, keep bool) (err error) {
	say := func(format string, args ...any) { fmt.Fprintf(out, "\n"+format+"\n", args...) }
	top := b.state.Topology
	if missing := missingClusters(top, testbed.DemoAWS, testbed.DemoGCP, testbed.DemoOnprem); len(missing) > 0 {
		return fmt.Errorf("the demo's story needs the clusters %s, %s and %s (the default topology); this topology has no %s: run the demo with the default topology",
			testbed.DemoAWS, testbed.DemoGCP, testbed.DemoOnprem, strings.Join(missing, ", "))
	}
	start := time.Now()
	say("▶ Three sovereign clusters — AWS Frankfurt, GCP Frankfurt and an on-prem rack — each with its own\n  API server, Cilium, Flux and Polykube operator, joined by Cilium ClusterMesh. No central control plane.")
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

	say("▶ A developer commits billing-api to Git: 6 replicas in AWS and 4 in GCP, none on-prem, and its\n  global ServiceEndpoint. Every replica answers a call with the name of its cluster.")
	rev, err := testbed.CommitDir(ctx, b, filepath.Join(b.opts.SourceDir, "examples", "local-multicluster", "billing-api-echo"),
		testbed.DemoWorkload, "workloads: billing-api, 6 in AWS and 4 in GCP, global")
	if err != nil {
		return err
	}
	if err := datapath.WaitApplied(ctx, b.env, rev); err != nil {
		return err
	}
	for _, c := range []string{testbed.DemoAWS, testbed.DemoGCP} {
		if err := b.WaitDeploymentIn(ctx, c, testbed.DemoNamespace, testbed.DemoWorkload); err != nil {
			return err
		}
	}
	say("▶ Each cluster's operator read the same Workload and ran only its own slice (polykube-status):")
	b.printFleet(ctx, out)

	say("▶ A client on-prem, where no replica runs, calls the global Service %s/%s (%d calls a round,\n  repeated until ClusterMesh has synchronised):", testbed.DemoNamespace, testbed.DemoWorkload, DemoCalls)
	if err := b.probeUntil(ctx, out, testbed.DemoOnprem, func(t datapath.Tally) error {
		return CheckTally(t, []string{testbed.DemoAWS, testbed.DemoGCP}, []string{testbed.DemoOnprem})
	}); err != nil {
		return err
	}

	say("▶ GCP goes dark: its nodes stop.")
	if err := b.Stop(ctx, testbed.FaultAPIServer, testbed.DemoGCP); err != nil {
		return err
	}
	stopped := time.Now()
	say("▶ The client calls again. Cilium keeps GCP's last-known backends for a while; the calls sent\n  there fail until it drops them:")
	if err := b.probeUntil(ctx, out, testbed.DemoOnprem, func(t datapath.Tally) error {
		return CheckTally(t, []string{testbed.DemoAWS}, []string{testbed.DemoGCP, testbed.DemoOnprem})
	}); err != nil {
		return err
	}
	if !b.opts.DryRun {
		fmt.Fprintf(out, "  every call answered by AWS alone %s after GCP's nodes stopped\n", time.Since(stopped).Round(time.Second))
	}
	b.printFleet(ctx, out)

	say("▶ GCP comes back. Its operator finds its slice still there; ClusterMesh takes its endpoints back.")
	if err := b.Start(ctx, testbed.FaultAPIServer, testbed.DemoGCP); err != nil {
		return err
	}
	started := time.Now()
	if err := b.WaitDeploymentIn(ctx, testbed.DemoGCP, testbed.DemoNamespace, testbed.DemoWorkload); err != nil {
		return err
	}
	if err := b.probeUntil(ctx, out, testbed.DemoOnprem, func(t datapath.Tally) error {
		return CheckTally(t, []string{testbed.DemoAWS, testbed.DemoGCP}, []string{testbed.DemoOnprem})
	}); err != nil {
		return err
	}
	if !b.opts.DryRun {
		fmt.Fprintf(out, "  GCP answers again %s after its nodes started\n", time.Since(started).Round(time.Second))
	}
	b.printFleet(ctx, out)
	if !b.opts.DryRun {
		say("✓ One Git commit, three independent operators, calls answered across clouds, a cloud lost and\n  regained with no hub. (%s)", time.Since(start).Round(time.Second))
	}
	return nil
}

func missingClusters(top *topology.Topology, names ...string) []string {
	var missing []string
	for _, n := range names {
		if !slices.Contains(top.ClusterNames(), n) {
			missing = append(missing, n)
		}
	}
	return missing
}

// probeUntil calls billing-api from cluster, DemoCalls calls a round, until check passes on a
// round's tally or demoRouted's time is up; it prints each round's counts and the last round's
// table. A dry run prints the probe once.
func (b *Bed) probeUntil(ctx context.Context, out io.Writer, cluster string, check func(datapath.Tally) error) error {
	start := time.Now()
	var last *datapath.Tally
	round := 0
	err := wait.For(ctx, demoRouted, "calls from "+cluster+" routed as the mesh should", func(ctx context.Context) error {
		answers, err := datapath.Call(ctx, b.env, cluster, testbed.DemoNamespace, testbed.DemoWorkload, DemoCalls)
		if err != nil {
			return wait.Stop(err)
		}
		if b.opts.DryRun {
			return nil
		}
		round++
		t := datapath.Count(answers, b.state.Topology.ClusterNames())
		last = &t
		fmt.Fprintf(out, "  round %d (%s): %s\n", round, time.Since(start).Round(time.Second), t.Summary())
		return check(t)
	})
	if last != nil {
		last.Print(out)
	}
	return err
}

// CheckTally is what the demo (and so `make e2e`) requires of a round of calls: every call
// answered, each of answering among the answers, none of silent.
func CheckTally(t datapath.Tally, answering, silent []string) error {
	if t.Unanswered > 0 {
		return fmt.Errorf("%d of %d calls through the global Service got no answer", t.Unanswered, t.Total)
	}
	for _, c := range answering {
		if t.Of(c) == 0 {
			return fmt.Errorf("no call was answered by %s", c)
		}
	}
	for _, c := range silent {
		if n := t.Of(c); n > 0 {
			return fmt.Errorf("%d calls were answered by %s, which should answer none", n, c)
		}
	}
	return nil
}

// printFleet prints what polykube-status shows for billing-api, read from every cluster's
// own API server as an operator's user would (unreachable clusters marked).
func (b *Bed) printFleet(ctx context.Context, out io.Writer) {
	if !b.env.Runner.Note("read polykube-status of namespace %s from every cluster", testbed.DemoNamespace) {
		return
	}
	testbed.PrintFleet(ctx, out, testbed.DemoNamespace, b.state.Topology.ClusterNames(), b.AdminConfig)
}
