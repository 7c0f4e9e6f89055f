package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// gitopsBenchCount is how many objects each side of BenchmarkGitOps_1000Workloads commits.
const gitopsBenchCount = 1000

// BenchmarkGitOps_1000Workloads: the end-to-end GitOps figure, in one run on one kwok cluster
// with Flux and the operator: Flux applying 1,000 Deployments committed to Git, beside Flux
// applying 1,000 Workloads committed to Git and the operator converging them (every
// Deployment created and every status written). Goal: Workloads ≤ 2× Deployments. Both sides
// run zero replicas, so that pod churn from one side does not load the other.
func BenchmarkGitOps_1000Workloads(b *testing.B) {
	tc := benchTools(b)
	top := nClusters(1, benchAddons())
	if !top.HasAddon(topology.AddonOperator) {
		b.Skip("the checkout has no operator")
	}
	// A Kustomization apply of 1,000 objects on a loaded 2-core machine can outlast the
	// test bed's default delivery wait.
	if top.Waits == nil {
		top.Waits = map[string]topology.Wait{}
	}
	top.Waits[topology.WaitDelivery] = topology.Wait{Timeout: topology.Duration{Duration: 10 * time.Minute}, Interval: topology.Duration{Duration: 200 * time.Millisecond}}
	ctx := context.Background()
	tb := upForBench(b, tc, top)
	cluster := top.Clusters[0].Name
	cl, err := tb.Client(cluster)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		deployments := writeManifests(b, "bench-deployments", func(i int) string {
			return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: d%04d, namespace: bench-deployments}
spec:
  replicas: 0
  selector: {matchLabels: {app: d%04d}}
  template:
    metadata: {labels: {app: d%04d}}
    spec: {containers: [{name: app, image: registry.example.com/app:v1}]}
`, i, i, i)
		})
		start := time.Now()
		rev, err := tb.CommitDir(ctx, deployments, "bench-deployments", "")
		if err != nil {
			b.Fatal(err)
		}
		if err := tb.WaitDelivered(ctx, rev); err != nil {
			b.Fatal(err)
		}
		direct := time.Since(start)

		workloads := writeManifests(b, "bench-workloads", func(i int) string {
			return fmt.Sprintf(`apiVersion: polykube.kismet.io/v1alpha1
kind: Workload
metadata: {name: w%04d, namespace: bench-workloads}
spec:
  distribution:
    strategy: Static
    targets: [{clusterRef: %s, replicas: 0}]
  template:
    spec: {containers: [{name: app, image: registry.example.com/app:v1}]}
`, i, cluster)
		})
		start = time.Now()
		rev, err = tb.CommitDir(ctx, workloads, "bench-workloads", "")
		if err != nil {
			b.Fatal(err)
		}
		if err := tb.WaitDelivered(ctx, rev); err != nil {
			b.Fatal(err)
		}
		applied := time.Since(start)
		err = wait.For(ctx, tb.wait(topology.WaitDelivery), "the operator to converge 1,000 Workloads", func(ctx context.Context) error {
			return converged(ctx, cl, "bench-workloads")
		})
		if err != nil {
			b.Fatal(err)
		}
		viaOperator := time.Since(start)
		ratio := viaOperator.Seconds() / direct.Seconds()
		fmt.Printf("\nGitOps end to end (one kwok cluster, Flux and the operator as processes, %d objects, 0 replicas)\n", gitopsBenchCount)
		fmt.Printf("  commit -> Flux applied %d Deployments                 %7.2fs\n", gitopsBenchCount, direct.Seconds())
		fmt.Printf("  commit -> Flux applied %d Workloads                   %7.2fs\n", gitopsBenchCount, applied.Seconds())
		fmt.Printf("  commit -> operator converged (Deployments + statuses) %7.2fs  ratio %.2f (goal <= 2)\n\n", viaOperator.Seconds(), ratio)
		b.ReportMetric(direct.Seconds(), "flux-deployments-s")
		b.ReportMetric(applied.Seconds(), "flux-workloads-s")
		b.ReportMetric(viaOperator.Seconds(), "gitops-converged-s")
		b.ReportMetric(ratio, "gitops-ratio")

		b.StopTimer()
		// The next iteration starts from an empty repository directory and namespace again.
		if _, err := tb.Commit(ctx, gitrepo.Change{Message: "bench: remove", Remove: []string{
			gitrepo.WorkloadsDir + "/bench-deployments", gitrepo.WorkloadsDir + "/bench-workloads"}}); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// writeManifests writes a namespace and gitopsBenchCount objects into a temporary directory.
func writeManifests(b *testing.B, namespace string, object func(i int) string) string {
	b.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "apiVersion: v1\nkind: Namespace\nmetadata: {name: %s}\n", namespace)
	for i := range gitopsBenchCount {
		sb.WriteString("---\n")
		sb.WriteString(object(i))
	}
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "objects.yaml"), []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	return dir
}

// converged reports nil once every Workload in the namespace has a status for its current
// generation and a Deployment.
func converged(ctx context.Context, cl client.Client, namespace string) error {
	var wls polykubev1alpha1.WorkloadList
	if err := cl.List(ctx, &wls, client.InNamespace(namespace)); err != nil {
		return err
	}
	var deps appsv1.DeploymentList
	if err := cl.List(ctx, &deps, client.InNamespace(namespace)); err != nil {
		return err
	}
	pending := 0
	for _, w := range wls.Items {
		if w.Status.ObservedGeneration != w.Generation {
			pending++
		}
	}
	if len(wls.Items) != gitopsBenchCount || len(deps.Items) != gitopsBenchCount || pending > 0 {
		return fmt.Errorf("%d Workloads, %d Deployments, %d statuses not written yet", len(wls.Items), len(deps.Items), pending)
	}
	return nil
}
