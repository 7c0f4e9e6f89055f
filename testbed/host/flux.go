package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	corev1 "k8s.io/api/core/v1"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

func sourceProc(cluster string) string    { return cluster + "-source-controller" }
func kustomizeProc(cluster string) string { return cluster + "-kustomize-controller" }

// upFlux installs Flux in every cluster: CRDs, controllers as processes, then a
// GitRepository and a Kustomization for the cluster's entry point; it returns when every
// Kustomization applied the seeded revision.
func (tb *Testbed) upFlux(ctx context.Context) error {
	tc, err := tb.toolchain()
	if err != nil {
		return err
	}
	crdDir, err := tc.FluxCRDs(ctx)
	if err != nil {
		return err
	}
	return tb.forEachCluster(func(c topology.Cluster) error {
		cl, err := tb.Client(c.Name)
		if err != nil {
			return err
		}
		if err := testbed.ApplyCRDDir(ctx, cl, crdDir, tb.wait(topology.WaitCRDs)); err != nil {
			return err
		}
		if err := tb.startFlux(ctx, c.Name); err != nil {
			return err
		}
		if err := tb.applyFluxObjects(ctx, cl, c.Name); err != nil {
			return err
		}
		return tb.waitApplied(ctx, cl, c.Name, tb.state.Git.Seeded, tb.wait(topology.WaitFluxReady))
	})
}

// startFlux starts the cluster's source- and kustomize-controller (unless running), with
// ports recorded on first start so that a restart reuses them.
func (tb *Testbed) startFlux(ctx context.Context, cluster string) error {
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	tb.mu.Unlock()
	if cs == nil {
		return fmt.Errorf("cluster %s is not up", cluster)
	}
	if cs.Flux.SourceHealth == 0 {
		p, err := ports.Free(5)
		if err != nil {
			return err
		}
		tb.mu.Lock()
		cs.Flux = FluxPorts{p[0], p[1], p[2], p[3], p[4]}
		tb.mu.Unlock()
		if err := tb.saveState(); err != nil {
			return err
		}
	}
	src, err := tb.binary(toolchain.SourceController)
	if err != nil {
		return err
	}
	kus, err := tb.binary(toolchain.KustomizeController)
	if err != nil {
		return err
	}
	env := []string{"KUBECONFIG=" + cs.Kubeconfig, "RUNTIME_NAMESPACE=" + testbed.FluxNamespace}
	addr := func(p int) string { return fmt.Sprintf("127.0.0.1:%d", p) }
	storage := filepath.Join(tb.dir, "flux", cluster, "storage")
	if err := os.MkdirAll(storage, 0o755); err != nil {
		return err
	}
	// --max-retry-delay caps the backoff of an object whose reconcile failed (Flux's default is
	// 15m). A Kustomization whose dependency is not ready returns an error with its requeue, so
	// each look at the dependency doubles its wait: after an API server outage the entry point
	// waited minutes for an operator Kustomization that was Ready again (the soak's step 16 at
	// seed 20261207: over 2 minutes). Capped, a delivery after a repaired fault takes at most
	// this long more; on a real fleet `flux reconcile kustomization` does what the cap does.
	common := []string{"--enable-leader-election=false", "--watch-all-namespaces=true", "--log-encoding=console", "--max-retry-delay=15s"}
	if err := tb.startProc(ctx, proc.Spec{
		Name: sourceProc(cluster), Path: src, Env: env,
		Args: append([]string{
			"--storage-path=" + storage,
			"--storage-addr=" + addr(cs.Flux.SourceStorage),
			"--storage-adv-addr=" + addr(cs.Flux.SourceStorage),
			"--metrics-addr=" + addr(cs.Flux.SourceMetrics),
			"--health-addr=" + addr(cs.Flux.SourceHealth),
		}, common...),
		HealthURL: "http://" + addr(cs.Flux.SourceHealth) + "/healthz",
	}); err != nil {
		return err
	}
	return tb.startProc(ctx, proc.Spec{
		Name: kustomizeProc(cluster), Path: kus, Env: env,
		Args: append([]string{
			"--metrics-addr=" + addr(cs.Flux.KustomizeMetrics),
			"--health-addr=" + addr(cs.Flux.KustomizeHealth),
			// The cluster's entry point dependsOn the operator's Kustomization: on every new
			// revision it finds the operator's not yet applied and looks again after this
			// (default 30s, which every commit of a scenario would wait once).
			"--requeue-dependency=1s",
		}, common...),
		HealthURL: "http://" + addr(cs.Flux.KustomizeHealth) + "/healthz",
	})
}

// applyFluxObjects creates or updates the cluster's GitRepository and Kustomization.
func (tb *Testbed) applyFluxObjects(ctx context.Context, cl client.Client, cluster string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: testbed.FluxNamespace}}
	if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", testbed.FluxNamespace, err)
	}
	interval := metav1.Duration{Duration: tb.state.Topology.Flux.Interval.Duration}
	applyInterval := metav1.Duration{Duration: tb.state.Topology.Flux.ApplyInterval.Duration}
	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: testbed.FluxObjectName, Namespace: testbed.FluxNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, cl, repo, func() error {
		repo.Spec.URL = tb.GitURL()
		repo.Spec.Interval = interval
		repo.Spec.Timeout = &metav1.Duration{Duration: 20 * time.Second}
		repo.Spec.Reference = &sourcev1.GitRepositoryRef{Branch: gitrepo.Branch}
		return nil
	}); err != nil {
		return fmt.Errorf("apply GitRepository %s/%s: %w", testbed.FluxNamespace, testbed.FluxObjectName, err)
	}
	// The operator (with the CRDs) has a Kustomization of its own, as users deliver it; the
	// cluster's entry point depends on it.
	withOperator := tb.state.Operator.Deployment.Name != ""
	if withOperator {
		if err := applyKustomization(ctx, cl, gitrepo.OperatorKustomization, "./"+gitrepo.OperatorDir, cluster, applyInterval, nil); err != nil {
			return err
		}
	}
	var dependsOn []string
	if withOperator {
		dependsOn = []string{gitrepo.OperatorKustomization}
	}
	return applyKustomization(ctx, cl, testbed.FluxObjectName, "./"+gitrepo.ClusterPath(cluster), cluster, applyInterval, dependsOn)
}

// applyKustomization creates or updates a Kustomization of the test bed's GitRepository.
func applyKustomization(ctx context.Context, cl client.Client, name, path, cluster string, interval metav1.Duration, dependsOn []string) error {
	ks := &kustomizev1.Kustomization{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testbed.FluxNamespace}}
	if _, err := controllerutil.CreateOrUpdate(ctx, cl, ks, func() error {
		ks.Spec.Interval = interval
		ks.Spec.RetryInterval = &metav1.Duration{Duration: 5 * time.Second}
		ks.Spec.Timeout = &metav1.Duration{Duration: time.Minute}
		ks.Spec.Path = path
		ks.Spec.Prune = true
		ks.Spec.SourceRef = kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: testbed.FluxObjectName}
		ks.Spec.PostBuild = &kustomizev1.PostBuild{Substitute: map[string]string{gitrepo.ClusterNameVar: cluster}}
		ks.Spec.DependsOn = nil
		for _, d := range dependsOn {
			ks.Spec.DependsOn = append(ks.Spec.DependsOn, kustomizev1.DependencyReference{Name: d})
		}
		return nil
	}); err != nil {
		return fmt.Errorf("apply Kustomization %s/%s: %w", testbed.FluxNamespace, name, err)
	}
	return nil
}

// Fetch asks Flux in every reachable cluster to fetch Git now (the reconcile.fluxcd.io/requestedAt
// annotation, as `flux reconcile source git` sets it). A new revision is then applied at once:
// the Kustomization watches its source. (Asking the Kustomization too would only start a
// re-apply of the old revision that the new one then waits behind.) An unreachable cluster is
// skipped: its Flux catches up at its interval.
//
// With Argo CD delivery it asks each cluster's Applications to refresh instead.
func (tb *Testbed) Fetch(ctx context.Context) {
	switch {
	case tb.state.Topology.HasAddon(topology.AddonArgoCD):
		tb.refreshArgoCD(ctx)
		return
	case !tb.state.Topology.HasAddon(topology.AddonFlux):
		return
	}
	now := time.Now().Format(time.RFC3339Nano)
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, now))
	_ = tb.forEachCluster(func(c topology.Cluster) error {
		cl, err := tb.Client(c.Name)
		if err != nil {
			return err
		}
		repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Name: testbed.FluxObjectName, Namespace: testbed.FluxNamespace}}
		return cl.Patch(ctx, repo, client.RawPatch("application/merge-patch+json", patch))
	})
}

// waitApplied waits until the cluster's Kustomization is Ready with the revision applied.
func (tb *Testbed) waitApplied(ctx context.Context, cl client.Client, cluster, revision string, w topology.Wait) error {
	return wait.For(ctx, w, fmt.Sprintf("Flux in %s to apply %s", cluster, revision), func(ctx context.Context) error {
		ks := &kustomizev1.Kustomization{}
		if err := cl.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: testbed.FluxObjectName}, ks); err != nil {
			return err
		}
		ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
		switch {
		case ks.Status.LastAppliedRevision != revision:
			why := "no Ready condition yet"
			if ready != nil {
				why = ready.Reason + ": " + ready.Message
			}
			return fmt.Errorf("Kustomization applied %q, not yet %s (%s)", ks.Status.LastAppliedRevision, revision, why)
		case ready == nil || ready.Status != metav1.ConditionTrue:
			if ready == nil {
				return errors.New("Kustomization has no Ready condition")
			}
			return fmt.Errorf("Kustomization not Ready: %s: %s", ready.Reason, ready.Message)
		}
		return nil
	})
}

// WaitDelivered waits until Flux (or Argo CD) in every cluster applied the revision.
func (tb *Testbed) WaitDelivered(ctx context.Context, revision string, clusters ...string) error {
	if len(clusters) == 0 {
		clusters = tb.state.Topology.ClusterNames()
	}
	errs := make(chan error, len(clusters))
	for _, name := range clusters {
		go func() {
			cl, err := tb.Client(name)
			switch {
			case err != nil:
			case tb.state.Topology.HasAddon(topology.AddonArgoCD):
				err = tb.waitSynced(ctx, name, revision, tb.wait(topology.WaitDelivery))
			default:
				err = tb.waitApplied(ctx, cl, name, revision, tb.wait(topology.WaitDelivery))
			}
			errs <- err
		}()
	}
	var all []error
	for range clusters {
		if err := <-errs; err != nil {
			all = append(all, err)
		}
	}
	return errors.Join(all...)
}
