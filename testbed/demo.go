package testbed

import (
	"context"
	"embed"
	"fmt"
	"io"
	"io/fs"
	"path"
	"time"

	"k8s.io/client-go/rest"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// demoFS holds the demo's manifests; examples/local-multicluster/billing-api{,-scaled} are
// the same files (a test keeps them equal).
//
//go:embed demo
var demoFS embed.FS

// The Workload of the article's story and the clusters it tells of (the default topology's),
// the same in the hermetic demo and the kind demo.
const (
	DemoNamespace = "production"
	DemoWorkload  = "billing-api"
	DemoAWS       = "aws-eu-central-1"
	DemoGCP       = "gcp-europe-west3"
	DemoOnprem    = "onprem-fra"
)

// Demo tells the article's story on the kwok federation (`make demo`): it brings the three
// clusters up, commits billing-api to Git, shows each operator running its own slice, stops
// GCP's API server, scales through Git while GCP is down, brings GCP back and shows it catch
// up. It tears down at the end unless keep (or, when the demo fails, the bed was opened with
// Retain).
func (b HermeticBed) Demo(ctx context.Context, out io.Writer, keep bool) (err error) {
	tb, retain := b.Testbed, b.up.Retain
	say := func(format string, args ...any) { fmt.Fprintf(out, "\n"+format+"\n", args...) }
	start := time.Now()
	say("▶ Three sovereign clusters — AWS Frankfurt, GCP Frankfurt and an on-prem rack — each with its own\n  API server, its own Flux and its own Polykube operator. No central control plane.")
	if err := tb.Up(ctx, b.up); err != nil {
		return err
	}
	defer func() {
		switch {
		case keep:
			say("The federation stays up (KEEP=1). Look around:\n  polykube-testbed status\n  kubectl --kubeconfig \"$(polykube-testbed kubeconfig %s)\" get workloads -A\n  polykube-testbed down", DemoAWS)
		case err != nil && retain:
			say("The demo failed; the federation stays up for debugging (--retain). `polykube-testbed logs` collects diagnostics.")
		default:
			fmt.Fprintln(out)
			if derr := tb.Down(context.WithoutCancel(ctx)); derr != nil && err == nil {
				err = derr
			} else if derr == nil {
				fmt.Fprintln(out, "Torn down; nothing left behind.")
			}
		}
	}()

	say("▶ A developer commits one manifest to Git: billing-api, 6 replicas in AWS and 4 in GCP.")
	rev, err := commitDemo(ctx, tb, "billing-api", "workloads: billing-api, 6 in AWS and 4 in GCP")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  committed %s\n", rev)
	if err := deliver(ctx, out, tb, rev, ""); err != nil {
		return err
	}
	say("▶ Each cluster read the same Workload and ran only its own slice:")
	printFleet(ctx, out, tb)

	say("▶ GCP's API server goes dark.")
	if err := tb.Stop(ctx, FaultAPIServer, DemoGCP); err != nil {
		return err
	}
	printFleet(ctx, out, tb)
	say("  AWS and on-prem carry on: nothing waits for GCP.")

	say("▶ While GCP is down, the developer scales to 12 replicas, split 60:40 by weight.")
	rev, err = commitDemo(ctx, tb, "scaled", "workloads: billing-api, 12 replicas by weight")
	if err != nil {
		return err
	}
	fmt.Fprintf(out, "  committed %s\n", rev)
	if err := deliver(ctx, out, tb, rev, DemoGCP); err != nil {
		return err
	}
	say("▶ AWS converged to its new share (7); on-prem, not a target, stays at 0; GCP is still unreachable:")
	printFleet(ctx, out, tb)

	say("▶ GCP comes back. Its Flux fetches the commit it missed; its operator catches up on its own.")
	if err := tb.Start(ctx, FaultAPIServer, DemoGCP); err != nil {
		return err
	}
	tb.Fetch(ctx)
	if err := tb.WaitDelivered(ctx, rev, DemoGCP); err != nil {
		return err
	}
	if err := tb.WaitReconciled(ctx, DemoNamespace, DemoWorkload, DemoGCP); err != nil {
		return err
	}
	printFleet(ctx, out, tb)
	say("✓ 12 replicas: 7 in AWS, 5 in GCP — one Git commit, three independent operators, no hub. (%s)", time.Since(start).Round(time.Second))
	return nil
}

// deliver waits until Flux applied rev and the operators reconciled billing-api in every
// cluster except skip.
func deliver(ctx context.Context, out io.Writer, tb *Testbed, rev, skip string) error {
	var clusters []string
	for _, c := range tb.Topology().ClusterNames() {
		if c != skip {
			clusters = append(clusters, c)
		}
	}
	start := time.Now()
	if err := tb.WaitDelivered(ctx, rev, clusters...); err != nil {
		return err
	}
	fmt.Fprintf(out, "  Flux applied it in %v (%s)\n", clusters, time.Since(start).Round(100*time.Millisecond))
	if err := tb.WaitReconciled(ctx, DemoNamespace, DemoWorkload, clusters...); err != nil {
		return err
	}
	fmt.Fprintf(out, "  the operators reconciled it (%s)\n", time.Since(start).Round(100*time.Millisecond))
	return nil
}

// commitDemo commits demo/<dir> as workloads/billing-api/.
func commitDemo(ctx context.Context, tb *Testbed, dir, msg string) (string, error) {
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
	return tb.Commit(ctx, gitrepo.Change{Put: files, Remove: []string{gitrepo.WorkloadsDir + "/" + DemoWorkload}, Message: msg})
}

// printFleet prints what polykube-status shows for the federation.
func printFleet(ctx context.Context, out io.Writer, tb *Testbed) {
	PrintFleet(ctx, out, DemoNamespace, tb.Topology().ClusterNames(), func(name string) (*rest.Config, error) {
		cl, err := tb.Cluster(name)
		if err != nil {
			return nil, err
		}
		return cl.RESTConfig()
	})
}

// PrintFleet prints what polykube-status shows for namespace: one table merged from every
// cluster's own status, read with config(cluster), unreachable clusters marked. Both demos
// print it.
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
	report := status.Merge(status.Collect(ctx, targets, q, nil), q)
	fmt.Fprintln(out)
	if err := status.PrintReport(out, report, status.FormatTable, status.ViewWorkloads, status.PrintOptions{}); err != nil {
		fmt.Fprintf(out, "  (polykube-status could not print: %v)\n", err)
	}
}
