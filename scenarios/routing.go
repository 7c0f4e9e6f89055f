package scenarios

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/cucumber/godog"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/scenarios/internal/harness"
	"github.com/polykube/polykube/testbed/datapath"
)

type answersKey struct{}

// probePort is the port of the global Services the routing steps commit (ServiceEndpoint
// ports: http 80 → 8080).
const probePort = 80

func routingSteps(r *registry) {
	r.step(`^the clusters are connected by Cilium ClusterMesh$`, step0(func(s *harness.Scenario, ctx context.Context) error {
		dp, err := s.Datapath()
		if err != nil {
			return err
		}
		return harness.Await(ctx, s.Config.Wait(harness.WaitConverge), "Cilium ClusterMesh to connect every member", dp.MeshReady)
	}))
	r.step(`^the Workload "([^"]*)" runs the echo server that answers with its cluster name$`, step1(func(s *harness.Scenario, ctx context.Context, name string) error {
		dp, err := s.Datapath()
		if err != nil {
			return err
		}
		w, err := s.Workload(name)
		if err != nil {
			return err
		}
		w.Spec.Template = dp.EchoTemplate()
		return nil
	}))
	r.step(`^the ServiceEndpoint "([^"]*)" for the Workload "([^"]*)" with affinity (none|local|remote)( and shared false| and global false)? is committed to Git(, its Workload's replicas not awaited)?$`, step5(func(s *harness.Scenario, ctx context.Context, name, workload, affinity, option, notAwaited string) error {
		se := &polykubev1alpha1.ServiceEndpoint{}
		se.APIVersion, se.Kind = polykubev1alpha1.GroupVersion.String(), "ServiceEndpoint"
		se.Name, se.Namespace = name, s.Namespace
		se.Spec = polykubev1alpha1.ServiceEndpointSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: workload},
			Ports:       []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80, TargetPort: 8080}},
			Affinity:    affinity,
		}
		switch option {
		case " and shared false":
			se.Spec.Shared = ptr.To(false) // service.cilium.io/shared: false in every cluster
		case " and global false":
			se.Spec.Global = ptr.To(false) // a local Service in every cluster: nothing is mirrored
		}
		if err := s.CommitManifest(ctx, "ServiceEndpoint", name, se); err != nil {
			return err
		}
		start := time.Now()
		if err := s.AwaitDelivered(ctx, s.Fed.Clusters(), s.Config.Wait(harness.WaitDelivery)); err != nil {
			return err
		}
		delivered := time.Since(start)
		// A story whose failover starts at once (a peer the others cannot see from the
		// start) never runs the plain allocation: it waits for what it tells instead.
		if notAwaited != "" {
			godog.Logf(ctx, "the ServiceEndpoint %q: applied by Flux in every cluster %s after the commit", name, delivered.Round(100*time.Millisecond))
			return nil
		}
		// The calls count the backends Cilium holds against the ready endpoints: every
		// slice must be ready first, or one still starting looks left out by the mesh.
		err := s.AwaitAllocated(ctx, workload)
		godog.Logf(ctx, "the ServiceEndpoint %q: applied by Flux in every cluster %s after the commit, the Workload %q allocated and ready %s after that",
			name, delivered.Round(100*time.Millisecond), workload, (time.Since(start) - delivered).Round(100*time.Millisecond))
		return err
	}))
	r.step(`^a client in cluster "([^"]*)" calls the Service "([^"]*)" (\d+) times$`, func(ctx context.Context, cluster, service string, n int) (context.Context, error) {
		s, dp, err := scenarioDatapath(ctx)
		if err != nil {
			return ctx, err
		}
		answers, err := s.CallSynced(ctx, dp, cluster, service, probePort, n)
		if err != nil {
			return ctx, fmt.Errorf("call %s from cluster %q: %w", service, cluster, err)
		}
		return context.WithValue(ctx, answersKey{}, answers), nil
	})
	r.step(`^a client in cluster "([^"]*)" fetches (\d+) answers of (\d+) KiB each from the Service "([^"]*)"$`, func(ctx context.Context, cluster string, n, kib int, service string) (context.Context, error) {
		s, dp, err := scenarioDatapath(ctx)
		if err != nil {
			return ctx, err
		}
		run := payloadRun{from: cluster, service: service, bytes: int64(kib) << 10}
		run.calls, err = s.CallPayloadSynced(ctx, dp, cluster, service, probePort, n, run.bytes)
		if err != nil {
			return ctx, fmt.Errorf("fetch from %s in cluster %q: %w", service, cluster, err)
		}
		answers := make([]string, len(run.calls))
		for i, c := range run.calls {
			if c.Error == "" && c.Bytes == run.bytes {
				answers[i] = c.Cluster
			}
		}
		ctx = context.WithValue(ctx, answersKey{}, answers)
		return context.WithValue(ctx, payloadKey{}, run), nil
	})
	r.step(`^every answer arrives whole$`, func(ctx context.Context) error {
		run, ok := ctx.Value(payloadKey{}).(payloadRun)
		if !ok {
			return fmt.Errorf("no answers were fetched in this scenario; add \"When a client in cluster … fetches … answers of … KiB each from the Service …\"")
		}
		line, err := run.check()
		if err != nil {
			return err
		}
		fmt.Print(line)
		godog.Logf(ctx, "%s", line)
		return nil
	})
	r.step(`^every call is answered$`, func(ctx context.Context) error {
		answers, err := lastAnswers(ctx)
		if err != nil {
			return err
		}
		if failed := countOf(answers, ""); failed > 0 {
			return fmt.Errorf("%d of %d calls got no answer", failed, len(answers))
		}
		return nil
	})
	r.step(`^answers come from each of the clusters (.+)$`, func(ctx context.Context, list string) error {
		want, err := quotedList(list)
		if err != nil {
			return err
		}
		answers, err := lastAnswers(ctx)
		if err != nil {
			return err
		}
		var missing []string
		for _, c := range want {
			if !slices.Contains(answers, c) {
				missing = append(missing, c)
			}
		}
		if len(missing) > 0 {
			return fmt.Errorf("no answer from %s; answers by cluster: %s", strings.Join(missing, ", "), tally(answers))
		}
		return nil
	})
	r.step(`^every answer comes from cluster "([^"]*)"$`, func(ctx context.Context, cluster string) error {
		answers, err := lastAnswers(ctx)
		if err != nil {
			return err
		}
		if countOf(answers, cluster) != len(answers) {
			return fmt.Errorf("want every answer from %s; answers by cluster: %s", cluster, tally(answers))
		}
		return nil
	})
	r.step(`^no answer comes from cluster "([^"]*)"$`, func(ctx context.Context, cluster string) error {
		answers, err := lastAnswers(ctx)
		if err != nil {
			return err
		}
		if countOf(answers, cluster) > 0 {
			return fmt.Errorf("want no answer from %s; answers by cluster: %s", cluster, tally(answers))
		}
		return nil
	})
}

// scenarioDatapath is the step's scenario and its federation's datapath.
func scenarioDatapath(ctx context.Context) (*harness.Scenario, harness.Datapath, error) {
	s, err := scenario(ctx)
	if err != nil {
		return nil, nil, err
	}
	dp, err := s.Datapath()
	return s, dp, err
}

type payloadKey struct{}

// payloadRun is one client's fetches of answers that carry a payload.
type payloadRun struct {
	from, service string
	bytes         int64
	calls         []datapath.CallRecord
}

// check fails unless every call's payload arrived whole, and gives the figures: by cluster,
// the time per call and the throughput (a new connection per call, so each starts slow).
func (p payloadRun) check() (string, error) {
	var failed []string
	var secs []float64
	var answers []string
	for _, c := range p.calls {
		switch {
		case c.Error != "":
			failed = append(failed, fmt.Sprintf("call %d: %s", c.N, c.Error))
		case c.Bytes != p.bytes:
			failed = append(failed, fmt.Sprintf("call %d (from %s): %d of %d bytes", c.N, c.Cluster, c.Bytes, p.bytes))
		default:
			secs = append(secs, c.Seconds)
			answers = append(answers, c.Cluster)
		}
	}
	if len(failed) > 0 {
		return "", fmt.Errorf("%d of %d answers of %d bytes did not arrive whole in %s: %s", len(failed), len(p.calls), p.bytes, p.from, strings.Join(failed, "; "))
	}
	if len(secs) == 0 {
		return "", fmt.Errorf("no answer was fetched in %s: ask for at least one", p.from)
	}
	slices.Sort(secs)
	med := secs[len(secs)/2]
	return fmt.Sprintf("payload: %d answers of %d KiB from the Service %s to a client in %s, every one whole; by cluster %s; per call %.0f ms median (%.0f–%.0f), %.1f MiB/s at the median\n",
		len(p.calls), p.bytes>>10, p.service, p.from, tally(answers), med*1000, secs[0]*1000, secs[len(secs)-1]*1000, float64(p.bytes)/(1<<20)/med), nil
}

func lastAnswers(ctx context.Context) ([]string, error) {
	a, ok := ctx.Value(answersKey{}).([]string)
	if !ok {
		return nil, fmt.Errorf("no calls were made in this scenario; add \"When a client in cluster … calls the Service …\"")
	}
	return a, nil
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func tally(answers []string) string {
	counts := map[string]int{}
	for _, a := range answers {
		if a == "" {
			a = "(no answer)"
		}
		counts[a]++
	}
	var parts []string
	for k, v := range counts {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	slices.Sort(parts)
	return strings.Join(parts, " ")
}
