package harness

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// argoGit is Git for a federation whose clusters each run an Argo CD of their own (delivery
// argocd) with the test bed's Applications (argocd/polykube for the cluster's entry point).
// Revisions are reported as Flux writes them (main@sha1:<hash>), so that a scenario compares
// what it committed with what a cluster applied the same way under both deliveries.
type argoGit struct{ fluxGit }

var refreshAnnotation = "argocd.argoproj.io/refresh"

func (g argoGit) app(ctx context.Context, cluster string) (*unstructured.Unstructured, error) {
	c, err := g.client(cluster)
	if err != nil {
		return nil, err
	}
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(testbed.ApplicationGVK)
	key := client.ObjectKey{Namespace: testbed.ArgoCDNamespace, Name: testbed.ArgoCDClusterApp}
	if err := c.Get(ctx, key, app); err != nil {
		return nil, fmt.Errorf("get Application %s: %w", key, err)
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
	c, err := g.client(cluster)
	if err != nil {
		return "", err
	}
	app := &unstructured.Unstructured{}
	app.SetGroupVersionKind(testbed.ApplicationGVK)
	app.SetNamespace(testbed.ArgoCDNamespace)
	app.SetName(testbed.ArgoCDClusterApp)
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

// AwaitArgoCDHealth waits until the Application delivering the scenario's objects in every
// cluster reports the named object with the health status given (Healthy, Progressing,
// Degraded), as Argo CD computes it from the health checks Polykube ships.
func (sc *Scenario) AwaitArgoCDHealth(ctx context.Context, kind, name, want string) error {
	g, ok := sc.Fed.Git().(argoGit)
	if !ok {
		return errors.New("this federation does not deliver with Argo CD: run the scenario with a topology of delivery: argocd (POLYKUBE_SCENARIO_TOPOLOGY=topology-argocd.yaml)")
	}
	what := fmt.Sprintf("Argo CD in every cluster to report the %s %s/%s %s", kind, sc.Namespace, name, want)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		var wrong []string
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
}

// deliveryGit is the Git of a bed: Flux's, or Argo CD's when the topology delivers with it.
func deliveryGit(top *topology.Topology, g fluxGit) Git {
	if top.Delivery == topology.DeliveryArgoCD {
		return argoGit{g}
	}
	return g
}
