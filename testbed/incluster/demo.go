package incluster

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// The in-cluster bed tells the demo's story with real traffic.
var (
	_ testbed.DemoStage   = (*Bed)(nil)
	_ testbed.DemoTraffic = (*Bed)(nil)
	_ testbed.Planner     = (*Bed)(nil)
)

// WaitSlices waits until the Deployment of every slice above zero is available in its
// cluster, in topology order.
func (b *Bed) WaitSlices(ctx context.Context, namespace, name string, slices map[string]int32) error {
	for _, c := range b.state.Topology.ClusterNames() {
		if slices[c] > 0 {
			if err := b.WaitDeploymentIn(ctx, c, namespace, name); err != nil {
				return err
			}
		}
	}
	return nil
}

// CallUntil calls the story's global Service from a cluster until every call of a round is
// answered, by each of answering and by none of silent (CheckTally).
func (b *Bed) CallUntil(ctx context.Context, out io.Writer, from string, answering, silent []string) error {
	return b.probeUntil(ctx, out, from, func(t datapath.Tally) error { return CheckTally(t, answering, silent) })
}

// Planning says the bed was opened to print its plan (--dry-run).
func (b *Bed) Planning() bool { return b.env.Runner.DryRun() }

// Note prints what a plan would do and says whether to do it (false in a plan).
func (b *Bed) Note(format string, args ...any) bool { return b.env.Runner.Note(format, args...) }

// probeUntil calls billing-api from cluster, testbed.DemoCalls calls a round, until check passes on a
// round's tally or the topology's routed wait is up; it prints each round's counts and the last round's
// table. A dry run prints the probe once.
func (b *Bed) probeUntil(ctx context.Context, out io.Writer, cluster string, check func(datapath.Tally) error) error {
	start := time.Now()
	var last *datapath.Tally
	round := 0
	err := wait.For(ctx, b.state.Topology.Wait(topology.WaitRouted), "calls from "+cluster+" routed as the mesh should", func(ctx context.Context) error {
		answers, err := datapath.Call(ctx, b.env, cluster, testbed.DemoNamespace, testbed.DemoWorkload, testbed.DemoCalls)
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
