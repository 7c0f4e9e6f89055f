package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// argoGit is Git for a federation delivered by Argo CD: each cluster's own (delivery argocd,
// the Application argocd/polykube for the cluster's entry point) or the hub's (argocd-central,
// the Application polykube-<cluster> the example's ApplicationSet generates, in the first
// cluster). Revisions are reported as Flux writes them (main@sha1:<hash>), so that a scenario
// compares what it committed with what a cluster applied the same way under every delivery.
type argoGit struct {
	fluxGit
	top *topology.Topology
}

var refreshAnnotation = "argocd.argoproj.io/refresh"

// The operator's namespace and Deployment, as gitops/operator names them.
const (
	operatorNamespace  = "polykube-system"
	operatorDeployment = "polykube-operator"
)

// app returns the Application that delivers the cluster's entry point.
func (g argoGit) app(ctx context.Context, cluster string) (*unstructured.Unstructured, error) {
	hub, name := testbed.ArgoCDClusterApplication(g.top, cluster)
	c, err := g.client(hub)
	if err != nil {
		return nil, err
	}
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(testbed.ApplicationGVK)
	key := client.ObjectKey{Namespace: testbed.ArgoCDNamespace, Name: name}
	if err := c.Get(ctx, key, app); err != nil {
		return nil, fmt.Errorf("get Application %s in cluster %s: %w", key, hub, err)
	}
	return app, nil
}

// AppliedRevision is the commit the cluster's Application last synced successfully, and
// whether its last look at Git worked (no ComparisonError condition).
func (g argoGit) AppliedRevision(ctx context.Context, cluster string) (string, bool, error) {
	app, err := g.app(ctx, cluster)
	if err != nil {
		return "", false, err
	}
	rev, _, _ := unstructured.NestedString(app.Object, "status", "operationState", "syncResult", "revision")
	fetchOK := comparisonError(app) == ""
	if rev == "" || testbed.AppSynced(app, rev) != nil {
		// Not (yet) synced at its last sync's commit: report what it last synced, if anything.
		rev, _, _ = unstructured.NestedString(app.Object, "status", "sync", "revision")
		if err := testbed.AppSynced(app, rev); err != nil || rev == "" {
			return "", fetchOK, nil
		}
	}
	return gitrepo.Branch + "@sha1:" + rev, fetchOK, nil
}

func comparisonError(app *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(app.Object, "status", "conditions")
	for _, c := range conds {
		if m, ok := c.(map[string]any); ok && m["type"] == "ComparisonError" {
			return fmt.Sprint(m["message"])
		}
	}
	return ""
}

// RequestApply asks the cluster's Argo CD to compare with Git again (the refresh
// annotation); Argo CD removes the annotation when it has. The token is the time asked.
func (g argoGit) RequestApply(ctx context.Context, cluster string) (string, error) {
	hub, name := testbed.ArgoCDClusterApplication(g.top, cluster)
	c, err := g.client(hub)
	if err != nil {
		return "", err
	}
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(testbed.ApplicationGVK)
	app.SetNamespace(testbed.ArgoCDNamespace)
	app.SetName(name)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:"normal"}}}`, refreshAnnotation)
	if err := c.Patch(ctx, app, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", fmt.Errorf("ask Argo CD in cluster %q to refresh: %w", cluster, err)
	}
	return time.Now().UTC().Format(time.RFC3339Nano), nil
}

// ApplyHandled reports the refresh handled once Argo CD removed the annotation, and ready when
// the Application is Synced and its last sync succeeded.
func (g argoGit) ApplyHandled(ctx context.Context, cluster, _ string) (bool, bool, string, error) {
	app, err := g.app(ctx, cluster)
	if err != nil {
		return false, false, "", err
	}
	if _, pending := app.GetAnnotations()[refreshAnnotation]; pending {
		return false, false, "", nil
	}
	rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
	if err := testbed.AppSynced(app, rev); err != nil {
		if ce := comparisonError(app); ce != "" {
			return true, false, ce, nil
		}
		return true, false, err.Error(), nil
	}
	return true, true, "", nil
}

// AwaitArgoCDHealth waits until the Application delivering the scenario's objects to every
// cluster reports the named object with the health status given (Healthy, Progressing,
// Degraded), as Argo CD computes it from the health checks Polykube ships. It returns what the
// Applications' status.resources say of the object, a line per cluster, for the scenario's log.
func (sc *Scenario) AwaitArgoCDHealth(ctx context.Context, kind, name, want string) (string, error) {
	g, ok := sc.Fed.Git().(argoGit)
	if !ok {
		return "", errors.New("this federation does not deliver with Argo CD: run the scenario with a topology of delivery argocd or argocd-central (POLYKUBE_SCENARIO_TOPOLOGY=topology-argocd.yaml or topology-argocd-central.yaml)")
	}
	what := fmt.Sprintf("Argo CD to report the %s %s/%s %s for every cluster", kind, sc.Namespace, name, want)
	var seen []string
	err := Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		var wrong []string
		seen = seen[:0]
		for _, cl := range sc.Fed.Clusters() {
			app, err := g.app(ctx, cl)
			if err != nil {
				return err
			}
			got := "not listed in status.resources"
			res, _, _ := unstructured.NestedSlice(app.Object, "status", "resources")
			for _, r := range res {
				m, ok := r.(map[string]any)
				if !ok || m["kind"] != kind || m["name"] != name || m["namespace"] != sc.Namespace {
					continue
				}
				status, _, _ := unstructured.NestedString(m, "health", "status")
				msg, _, _ := unstructured.NestedString(m, "health", "message")
				got = strings.TrimSpace(status + " " + msg)
				hub, _ := testbed.ArgoCDClusterApplication(g.top, cl)
				seen = append(seen, fmt.Sprintf("Argo CD (in %s) Application %s status.resources: %s %s/%s health %s, message %q",
					hub, app.GetName(), kind, sc.Namespace, name, status, msg))
				if status == want {
					got = ""
				}
			}
			if got != "" {
				wrong = append(wrong, fmt.Sprintf("%s: %s", cl, got))
			}
		}
		if len(wrong) > 0 {
			return errors.New(strings.Join(wrong, "; "))
		}
		return nil
	})
	return strings.Join(seen, "\n"), err
}

// deliveryGit is the Git of a bed: Flux's, or Argo CD's when the topology delivers with it.
func deliveryGit(top *topology.Topology, g fluxGit) Git {
	if top.ArgoCD() {
		return argoGit{g, top}
	}
	return g
}

// DeleteApplicationCascading deletes the named Application in every cluster as
// `argocd app delete --cascade --propagation-policy foreground` does: with Argo CD's foreground
// resources finalizer, so that Argo CD deletes every object the Application manages, except
// those annotated argocd.argoproj.io/sync-options: Delete=false. It returns once the
// Applications are gone, and keeps them to create again; if the scenario ends first, its
// teardown creates them again and restarts the operators.
func (sc *Scenario) DeleteApplicationCascading(ctx context.Context, name string) error {
	if g, ok := sc.Fed.Git().(argoGit); !ok || g.top.Delivery != topology.DeliveryArgoCD {
		return errors.New("this step deletes each cluster's own Application, which only delivery argocd has: run the scenario with POLYKUBE_SCENARIO_TOPOLOGY=topology-argocd.yaml")
	}
	kept := map[string]*unstructured.Unstructured{}
	err := sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		app := &unstructured.Unstructured{}
		app.SetGroupVersionKind(testbed.ApplicationGVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.ArgoCDNamespace, Name: name}, app); err != nil {
			return fmt.Errorf("get Application %s: %w", name, err)
		}
		kept[cl] = app.DeepCopy()
		patch := []byte(`{"metadata":{"finalizers":["resources-finalizer.argocd.argoproj.io/foreground"]}}`)
		if err := c.Patch(ctx, app, client.RawPatch(types.MergePatchType, patch)); err != nil {
			return fmt.Errorf("add Argo CD's resources finalizer to Application %s: %w", name, err)
		}
		return c.Delete(ctx, app)
	})
	sc.OnTeardown("create the Application "+name+" again", func(ctx context.Context) error {
		if len(sc.deletedApps) == 0 {
			return nil
		}
		return sc.RecreateApplication(ctx, name)
	})
	sc.deletedApps = kept
	if err != nil {
		return err
	}
	return Await(ctx, sc.Config.Wait(WaitConverge), "Argo CD to delete the Application "+name+" and what it manages in every cluster", func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(testbed.ApplicationGVK)
			err := c.Get(ctx, client.ObjectKey{Namespace: testbed.ArgoCDNamespace, Name: name}, app)
			if err == nil {
				return fmt.Errorf("the Application %s is still there (finalizers %v)", name, app.GetFinalizers())
			}
			return client.IgnoreNotFound(err)
		})
	})
}

// RecreateApplication creates again, in every cluster, the Application the scenario deleted,
// waits until it synced again, and restarts the operators: the ServiceAccount their tokens
// belonged to was deleted and created again, so the test bed starts each with a fresh token, as
// a new pod would get.
func (sc *Scenario) RecreateApplication(ctx context.Context, name string) error {
	if len(sc.deletedApps) == 0 {
		return fmt.Errorf("the scenario deleted no Application %q", name)
	}
	err := sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		old := sc.deletedApps[cl]
		app := &unstructured.Unstructured{}
		app.SetGroupVersionKind(testbed.ApplicationGVK)
		app.SetNamespace(old.GetNamespace())
		app.SetName(old.GetName())
		app.Object["spec"] = old.Object["spec"]
		if err := c.Create(ctx, app); err != nil {
			return fmt.Errorf("create Application %s again: %w", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	sc.deletedApps = nil
	err = Await(ctx, sc.Config.Wait(WaitDelivery), "Argo CD to sync the Application "+name+" again in every cluster", func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			app := &unstructured.Unstructured{}
			app.SetGroupVersionKind(testbed.ApplicationGVK)
			if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.ArgoCDNamespace, Name: name}, app); err != nil {
				return err
			}
			rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
			if rev == "" {
				return errors.New("the Application has not compared with Git yet")
			}
			return testbed.AppSynced(app, rev)
		})
	})
	if err != nil {
		return err
	}
	for _, cl := range sc.Fed.Clusters() {
		if err := sc.Fed.Faults().Stop(ctx, testbed.FaultOperator, cl); err != nil {
			return fmt.Errorf("stop the operator of %s: %w", cl, err)
		}
		if err := sc.Fed.Faults().Start(ctx, testbed.FaultOperator, cl); err != nil {
			return fmt.Errorf("start the operator of %s with a fresh token: %w", cl, err)
		}
	}
	return nil
}

// CheckKeptByArgoCD checks, in every cluster, that what Polykube marks Delete=false (its CRDs
// and its namespace) is there and not being deleted, that the Workload is still there, and that
// the deletion did cascade: the operator's Deployment, which carries no such mark, is gone.
func (sc *Scenario) CheckKeptByArgoCD(ctx context.Context, workload string) error {
	return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		if err := checkPolykubeCRDsKept(ctx, c); err != nil {
			return err
		}
		ns := &corev1.Namespace{}
		if err := c.Get(ctx, client.ObjectKey{Name: operatorNamespace}, ns); err != nil {
			return fmt.Errorf("get namespace %s: %w", operatorNamespace, err)
		}
		if ns.DeletionTimestamp != nil {
			return fmt.Errorf("the namespace %s is being deleted", operatorNamespace)
		}
		w := &polykubev1alpha1.Workload{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, w); err != nil {
			return fmt.Errorf("get Workload %s: %w", workload, err)
		}
		if w.DeletionTimestamp != nil {
			return fmt.Errorf("the Workload %s is being deleted", workload)
		}
		d := &appsv1.Deployment{}
		err := c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment}, d)
		if err == nil {
			return fmt.Errorf("the operator's Deployment %s/%s is still there: the deletion did not cascade", operatorNamespace, operatorDeployment)
		}
		return client.IgnoreNotFound(err)
	})
}

// checkPolykubeCRDsKept checks that the cluster still has Polykube's CRDs and that none is
// being deleted (what Delete=false keeps when an Application goes).
func checkPolykubeCRDsKept(ctx context.Context, c client.Client) error {
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	if err := c.List(ctx, crds); err != nil {
		return err
	}
	var polykube int
	for _, crd := range crds.Items {
		if crd.Spec.Group != polykubev1alpha1.GroupVersion.Group {
			continue
		}
		polykube++
		if crd.DeletionTimestamp != nil {
			return fmt.Errorf("the CRD %s is being deleted", crd.Name)
		}
	}
	if polykube == 0 {
		return errors.New("no Polykube CRD is left")
	}
	return nil
}
