package harness

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/topology"
)

// centralGit is the Git of a federation delivered by the hub of delivery argocd-central, or an
// error that says which topology the step needs.
func (sc *Scenario) centralGit() (argoGit, error) {
	g, ok := sc.Fed.Git().(argoGit)
	if !ok || g.top.Delivery != topology.DeliveryArgoCDCentral {
		return argoGit{}, errors.New("this step needs the central Argo CD of delivery argocd-central: run the scenario with POLYKUBE_SCENARIO_TOPOLOGY=topology-argocd-central.yaml")
	}
	return g, nil
}

// hubObject is an empty object of the kind and name in the hub's Argo CD namespace.
func hubObject(gvk schema.GroupVersionKind, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	u.SetNamespace(testbed.ArgoCDNamespace)
	u.SetName(name)
	return u
}

// DeleteGeneratedApplication deletes the Application the hub generated for the cluster, as
// `kubectl delete application` does, and waits until the ApplicationSet generated it again (a
// new object: another UID) and it synced. The generated Applications carry no resources
// finalizer (CheckNoResourcesFinalizer), so the deletion takes nothing with it.
func (sc *Scenario) DeleteGeneratedApplication(ctx context.Context, cluster string) error {
	g, err := sc.centralGit()
	if err != nil {
		return err
	}
	hub, name := testbed.ArgoCDClusterApplication(g.top, cluster)
	c, err := sc.Clients.Admin(hub)
	if err != nil {
		return err
	}
	app := hubObject(testbed.ApplicationGVK, name)
	if err := c.Get(ctx, client.ObjectKeyFromObject(app), app); err != nil {
		return fmt.Errorf("get Application %s/%s in cluster %s: %w", testbed.ArgoCDNamespace, name, hub, err)
	}
	old := app.GetUID()
	if err := c.Delete(ctx, app, client.Preconditions{UID: &old}); err != nil {
		return fmt.Errorf("delete Application %s/%s: %w", testbed.ArgoCDNamespace, name, err)
	}
	what := fmt.Sprintf("the ApplicationSet to generate the Application %s again after its deletion, and it to sync", name)
	return Await(ctx, sc.Config.Wait(WaitDelivery), what, func(ctx context.Context) error {
		app, err := g.app(ctx, cluster)
		if err != nil {
			return err
		}
		if app.GetUID() == old {
			return fmt.Errorf("the Application %s is still the one deleted (deletion timestamp %v, finalizers %v)", name, app.GetDeletionTimestamp(), app.GetFinalizers())
		}
		rev, _, _ := unstructured.NestedString(app.Object, "status", "sync", "revision")
		if rev == "" {
			return fmt.Errorf("the new Application %s has not compared with Git yet", name)
		}
		return testbed.AppSynced(app, rev)
	})
}

// CheckKeptWithoutApplications checks, in every cluster, that what the hub's Applications had
// delivered is all still there and not being deleted: the Polykube CRDs, the operator's
// namespace and Deployment, every ClusterMember of the roster and the Workload.
func (sc *Scenario) CheckKeptWithoutApplications(ctx context.Context, workload string) error {
	return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		if err := checkPolykubeCRDsKept(ctx, c); err != nil {
			return err
		}
		kept := []struct {
			what string
			key  client.ObjectKey
			obj  client.Object
		}{
			{"namespace", client.ObjectKey{Name: operatorNamespace}, &corev1.Namespace{}},
			{"the operator's Deployment", client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment}, &appsv1.Deployment{}},
			{"the Workload", client.ObjectKey{Namespace: sc.Namespace, Name: workload}, &polykubev1alpha1.Workload{}},
		}
		for _, member := range sc.Fed.Clusters() {
			kept = append(kept, struct {
				what string
				key  client.ObjectKey
				obj  client.Object
			}{"the roster's ClusterMember", client.ObjectKey{Name: member}, &polykubev1alpha1.ClusterMember{}})
		}
		for _, k := range kept {
			if err := c.Get(ctx, k.key, k.obj); err != nil {
				return fmt.Errorf("get %s %s: %w", k.what, k.key, err)
			}
			if k.obj.GetDeletionTimestamp() != nil {
				return fmt.Errorf("%s %s is being deleted", k.what, k.key)
			}
		}
		return nil
	})
}

// CheckNoResourcesFinalizer checks that no Application the hub generated carries Argo CD's
// resources finalizer (the example's preserveResourcesOnDeletion): deleting one then leaves
// what it delivered in place.
func (sc *Scenario) CheckNoResourcesFinalizer(ctx context.Context) error {
	g, err := sc.centralGit()
	if err != nil {
		return err
	}
	for _, cl := range sc.Fed.Clusters() {
		app, err := g.app(ctx, cl)
		if err != nil {
			return err
		}
		if f := app.GetFinalizers(); len(f) > 0 {
			return fmt.Errorf("the Application %s carries the finalizers %v: deleting it would delete what it delivered to %s", app.GetName(), f, cl)
		}
	}
	return nil
}
