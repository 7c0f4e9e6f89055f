package testbed

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"k8s.io/client-go/rest"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// demoFS holds the demo's manifests; examples/local-multicluster/billing-api{,-scaled,-echo}
// are the same files (a test keeps them equal).
//
//go:embed demo
var demoFS embed.FS

// The Workload of the article's story and the clusters it tells of (the default topology's),
// the same on every bed.
const (
	DemoNamespace = "production"
	DemoWorkload  = "billing-api"
	DemoAWS       = "aws-eu-central-1"
	DemoGCP       = "gcp-europe-west3"
	DemoOnprem    = "onprem-fra"
)

// DemoStage is what the demo's story needs of a bed beyond Bed.
type DemoStage interface {
	Bed
	// WaitSlices returns once each cluster of slices runs its slice of the Workload, of that
	// many replicas: where the operators run as host processes (kwok: no pod runs), once each
	// operator reconciled it; where they run in the clusters, once the Deployment of every
	// slice above zero is available.
	WaitSlices(ctx context.Context, namespace, name string, slices map[string]int32) error
}

// DemoTraffic is the optional ability of a bed whose pods really run and reach each other:
// to call the story's global Service from a cluster, round after round within a bounded time,
// until every call is answered, by each of answering and by none of silent.
type DemoTraffic interface {
	CallUntil(ctx context.Context, out io.Writer, from string, answering, silent []string) error
}

// Planner is the optional ability of a bed that can be opened to plan (a dry run): Planning
// says it was; Note prints what it would do and says whether to do it (false in a plan).
type Planner interface {
	Planning() bool
	Note(format string, args ...any) bool
}

// Fetcher is the optional ability to ask every reachable cluster's Flux to fetch Git now,
// as a cluster back from an outage would otherwise wait for its interval.
type Fetcher interface {
	Fetch(ctx context.Context)
}

// DemoOptions are how `polykube-testbed demo` tells the story.
type DemoOptions struct {
	// Keep leaves the federation up at the end; Retain leaves it up when the story fails.
	Keep, Retain bool
}

// Demo tells the article's story on a bed (`make demo`), the same acts on every bed: it
// brings the three clusters up and commits billing-api to Git, 6 replicas in AWS and 4 in
// GCP; each operator runs only its own slice; GCP's API server goes dark and the others carry
// on; GCP comes back and catches up. A bed with DemoTraffic also shows a client on-prem calling
// the global Service, answered by both clouds, then by AWS alone, then by both again; a bed
// without it (kwok, where no pod runs) shows a commit instead: the developer scales to 12
// while GCP is down, and GCP, back, fetches the commit it missed. Every wait is bounded; the
// story fails when the federation does not do what it tells. It tears down at the end unless
// Keep (or, when the story fails, Retain).
func Demo(ctx context.Context, b DemoStage, out io.Writer, o DemoOptions) (err error) {
	say := func(format string, args ...any) { fmt.Fprintf(out, "\n"+format+"\n", args...) }
	plan := func(format string, args ...any) bool {
		if p, ok := b.(Planner); ok {
			return p.Note(format, args...)
		}
		return true
	}
	p, _ := b.(Planner)
	planning := p != nil && p.Planning()
	traffic, calls := b.(DemoTraffic)
	top := b.Topology()
	if missing := missingClusters(top.ClusterNames(), DemoAWS, DemoGCP, DemoOnprem); len(missing) > 0 {
		return fmt.Errorf("the demo's story needs the clusters %s, %s and %s (the default topology); this topology has no %s: run the demo with the default topology",
			DemoAWS, DemoGCP, DemoOnprem, strings.Join(missing, ", "))
	}
	printFleet := func() {
		if plan("read polykube-status of namespace %s from every cluster", DemoNamespace) {
			PrintFleet(ctx, out, DemoNamespace, top.ClusterNames(), b.AdminConfig)
		}
	}
	callUntil := func(answering, silent []string) error {
		return traffic.CallUntil(ctx, out, DemoOnprem, answering, silent)
	}
	// deliver waits until Flux applied rev and each cluster of slices runs its slice.
	deliver := func(rev string, slices map[string]int32, all bool) error {
		var clusters []string
		if !all {
			clusters = SortedIn(top.ClusterNames(), slices)
		}
		start := time.Now()
		if err := b.WaitDelivered(ctx, rev, clusters...); err != nil {
			return err
		}
		if !planning {
			fmt.Fprintf(out, "  Flux applied it in %v (%s)\n", SortedIn(top.ClusterNames(), slices), time.Since(start).Round(100*time.Millisecond))
		}
		if err := b.WaitSlices(ctx, DemoNamespace, DemoWorkload, slices); err != nil {
			return err
		}
		if !planning {
			fmt.Fprintf(out, "  the operators run their slices (%s)\n", time.Since(start).Round(100*time.Millisecond))
		}
		return nil
	}

	start := time.Now()
	if calls {
		say("▶ Three sovereign clusters — AWS Frankfurt, GCP Frankfurt and an on-prem rack — each with its own\n  API server, Cilium, Flux and Polykube operator, joined by Cilium ClusterMesh. No central control plane.")
	} else {
		say("▶ Three sovereign clusters — AWS Frankfurt, GCP Frankfurt and an on-prem rack — each with its own\n  API server, its own Flux and its own Polykube operator. No central control plane.")
	}
	if err := b.Up(ctx); err != nil {
		return err
	}
	defer func() {
		flag := ProviderFlag(top)
		switch {
		case o.Keep:
			say("The federation stays up (KEEP=1). Look around:\n  polykube-testbed status%[1]s\n  kubectl --kubeconfig \"$(polykube-testbed kubeconfig %[2]s%[1]s)\" get workloads -A\n  polykube-testbed down%[1]s", flag, DemoAWS)
		case err != nil && o.Retain:
			say("The demo failed; the federation stays up for debugging (--retain). `polykube-testbed logs%s` collects diagnostics.", flag)
		default:
			if derr := b.Down(context.WithoutCancel(ctx)); derr != nil && err == nil {
				err = derr
			} else if derr == nil && !planning {
				say("Torn down; nothing left behind.")
			}
		}
	}()

	manifests, echo := "billing-api", ""
	if calls {
		manifests, echo = "echo", " Every replica answers a call with the name of its cluster."
	}
	say("▶ A developer commits billing-api to Git: 6 replicas in AWS and 4 in GCP, none on-prem, and its\n  global ServiceEndpoint.%s", echo)
	rev, err := commitDemo(ctx, b, manifests, "workloads: billing-api, 6 in AWS and 4 in GCP, global")
	if err != nil {
		return err
	}
	if !planning {
		fmt.Fprintf(out, "  committed %s\n", rev)
	}
	if err := deliver(rev, map[string]int32{DemoAWS: 6, DemoGCP: 4, DemoOnprem: 0}, true); err != nil {
		return err
	}
	say("▶ Each cluster's operator read the same Workload and ran only its own slice (polykube-status):")
	printFleet()
	if calls {
		say("▶ A client on-prem, where no replica runs, calls the global Service %s/%s (%d calls a round,\n  repeated until ClusterMesh has synchronised):", DemoNamespace, DemoWorkload, DemoCalls)
		if err := callUntil([]string{DemoAWS, DemoGCP}, []string{DemoOnprem}); err != nil {
			return err
		}
	}

	if calls {
		say("▶ GCP goes dark: its nodes stop.")
	} else {
		say("▶ GCP's API server goes dark.")
	}
	if err := b.Stop(ctx, FaultAPIServer, DemoGCP); err != nil {
		return err
	}
	stopped := time.Now()
	missed := ""
	if calls {
		say("▶ The client calls again. Cilium keeps GCP's last-known backends for a while; the calls sent\n  there fail until it drops them:")
		if err := callUntil([]string{DemoAWS}, []string{DemoGCP, DemoOnprem}); err != nil {
			return err
		}
		if !planning {
			fmt.Fprintf(out, "  every call answered by AWS alone %s after GCP's nodes stopped\n", time.Since(stopped).Round(time.Second))
		}
		printFleet()
	} else {
		printFleet()
		say("  AWS and on-prem carry on: nothing waits for GCP.")
		say("▶ While GCP is down, the developer scales to 12 replicas, split 60:40 by weight.")
		if missed, err = commitDemo(ctx, b, "scaled", "workloads: billing-api, 12 replicas by weight"); err != nil {
			return err
		}
		if !planning {
			fmt.Fprintf(out, "  committed %s\n", missed)
		}
		if err := deliver(missed, map[string]int32{DemoAWS: 7, DemoOnprem: 0}, false); err != nil {
			return err
		}
		say("▶ AWS converged to its new share (7); on-prem, not a target, stays at 0; GCP is still unreachable:")
		printFleet()
	}

	if missed != "" {
		say("▶ GCP comes back. Its Flux fetches the commit it missed; its operator catches up on its own.")
	} else {
		say("▶ GCP comes back. Its operator finds its slice still there; ClusterMesh takes its endpoints back.")
	}
	if err := b.Start(ctx, FaultAPIServer, DemoGCP); err != nil {
		return err
	}
	started := time.Now()
	gcp := map[string]int32{DemoGCP: 4}
	if missed != "" {
		gcp[DemoGCP] = 5
		if f, ok := b.(Fetcher); ok {
			f.Fetch(ctx)
		}
		if err := b.WaitDelivered(ctx, missed, DemoGCP); err != nil {
			return err
		}
	}
	if err := b.WaitSlices(ctx, DemoNamespace, DemoWorkload, gcp); err != nil {
		return err
	}
	if calls {
		if err := callUntil([]string{DemoAWS, DemoGCP}, []string{DemoOnprem}); err != nil {
			return err
		}
		if !planning {
			fmt.Fprintf(out, "  GCP answers again %s after its nodes started\n", time.Since(started).Round(time.Second))
		}
	}
	printFleet()
	switch {
	case planning:
	case calls:
		say("✓ One Git commit, three independent operators, calls answered across clouds, a cloud lost and\n  regained with no hub. (%s)", time.Since(start).Round(time.Second))
	default:
		say("✓ 12 replicas: 7 in AWS, 5 in GCP — one Git commit, three independent operators, no hub. (%s)", time.Since(start).Round(time.Second))
	}
	return nil
}

// DemoCalls is how many calls each round of the story's calls makes.
const DemoCalls = 60

// commitDemo commits demo/<dir> as workloads/billing-api/.
func commitDemo(ctx context.Context, b Bed, dir, msg string) (string, error) {
	files := map[string][]byte{}
	err := fs.WalkDir(demoFS, path.Join("demo", dir), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := demoFS.ReadFile(p)
		files[path.Join(gitrepo.WorkloadsDir, DemoWorkload, path.Base(p))] = data
		return err
	})
	if err != nil {
		return "", err
	}
	return b.Commit(ctx, gitrepo.Change{Put: files, Remove: []string{gitrepo.WorkloadsDir + "/" + DemoWorkload}, Message: msg})
}

func missingClusters(have []string, names ...string) []string {
	var missing []string
	for _, n := range names {
		if !slices.Contains(have, n) {
			missing = append(missing, n)
		}
	}
	return missing
}

// SortedIn are the keys of m in the order of names.
func SortedIn(names []string, m map[string]int32) []string {
	var in []string
	for _, n := range names {
		if _, ok := m[n]; ok {
			in = append(in, n)
		}
	}
	return in
}

// PrintFleet prints what polykube-status shows for namespace: one table merged from every
// cluster's own status, read with config(cluster), unreachable clusters marked.
func PrintFleet(ctx context.Context, out io.Writer, namespace string, clusters []string, config func(cluster string) (*rest.Config, error)) {
	var targets []status.Target
	for _, name := range clusters {
		t := status.Target{Context: name, Namespace: namespace}
		cfg, err := config(name)
		if err != nil {
			t.ConfigErr = err
		} else {
			t.Config, t.Server = cfg, cfg.Host
		}
		targets = append(targets, t)
	}
	q := status.Query{Namespace: namespace, Timeout: 3 * time.Second}
	report := status.Read(ctx, targets, q, nil)
	fmt.Fprintln(out)
	if err := status.PrintReport(out, report, status.FormatTable, status.ViewWorkloads, status.PrintOptions{}); err != nil {
		fmt.Fprintf(out, "  (polykube-status could not print: %v)\n", err)
	}
}
