package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// The mistakes a user makes that must lose nothing (features/nothing-lost.feature).

// operatorKustomizationKey names the Kustomization that delivers the operator in every cluster.
func operatorKustomizationKey(name string) client.ObjectKey {
	return client.ObjectKey{Namespace: testbed.FluxNamespace, Name: name}
}

// StartOperatorAs stops the cluster's operator and starts it with another member's
// --cluster-name, as a Flux entry point copied from another cluster would; it remembers what
// the operator said when it refused to run. The teardown starts the operator as itself again.
func (sc *Scenario) StartOperatorAs(ctx context.Context, cluster, name string) error {
	if err := sc.InjectFault(ctx, testbed.FaultOperator, cluster); err != nil {
		return err
	}
	as, ok := sc.Fed.Faults().(testbed.OperatorImpersonation)
	if !ok {
		return fmt.Errorf("the %s test bed cannot start an operator under another cluster's name (implemented on kwok only; see docs/known-limitations.md)", sc.Fed.Provider())
	}
	out, err := as.StartOperatorAs(ctx, cluster, name)
	sc.operatorOutput = out
	if err != nil {
		return fmt.Errorf("start the operator of cluster %q as %q: %w (it printed: %s)", cluster, name, err, lastLines(out, 10))
	}
	return nil
}

// StartReplicaAs starts one more replica of the cluster's running operator with another
// member's --cluster-name, as a rollout of the operator Deployment with a CLUSTER_NAME copied
// from another cluster would while its old pod still runs; it remembers what the replica said
// when it refused to run. The running operator goes on.
func (sc *Scenario) StartReplicaAs(ctx context.Context, cluster, name string) error {
	rb, ok := sc.Fed.Faults().(testbed.OperatorReplicas)
	if !ok {
		return fmt.Errorf("the %s test bed cannot start a second replica of an operator (implemented on kwok only; see docs/known-limitations.md)", sc.Fed.Provider())
	}
	// The refusal leaves the pinned member's OperatorIdentity False (and its alert firing)
	// until the operator starts as itself; a scenario that stops before it does that here.
	if !slices.Contains(sc.identityRefused, cluster) {
		sc.identityRefused = append(sc.identityRefused, cluster)
		sc.OnTeardown("restart the operator of "+cluster+" as itself", func(ctx context.Context) error {
			if !slices.Contains(sc.identityRefused, cluster) {
				return nil
			}
			return sc.RestartOperatorAsItself(ctx, cluster)
		})
	}
	out, err := rb.StartReplicaAs(ctx, cluster, name)
	sc.operatorOutput = out
	if err != nil {
		return fmt.Errorf("start a second replica of the operator of cluster %q as %q: %w (it printed: %s)", cluster, name, err, lastLines(out, 10))
	}
	return nil
}

// RestartOperatorAsItself restarts the cluster's operator under its own name, as the rollout
// of a fixed CLUSTER_NAME replaces its pod.
func (sc *Scenario) RestartOperatorAsItself(ctx context.Context, cluster string) error {
	if err := sc.Fed.Faults().Stop(ctx, testbed.FaultOperator, cluster); err != nil {
		return fmt.Errorf("stop the operator of cluster %q: %w", cluster, err)
	}
	if err := sc.Fed.Faults().Start(ctx, testbed.FaultOperator, cluster); err != nil {
		return fmt.Errorf("start the operator of cluster %q again: %w", cluster, err)
	}
	sc.identityRefused = slices.DeleteFunc(sc.identityRefused, func(c string) bool { return c == cluster })
	return nil
}

// CheckOperatorRefused checks that the last operator started as another member said that it
// refused, naming the member the cluster is pinned to and the name it was started with.
func (sc *Scenario) CheckOperatorRefused(pinned, startedAs string) error {
	for _, want := range []string{fmt.Sprintf("pinned to ClusterMember %q", pinned), fmt.Sprintf("--cluster-name %q", startedAs), "refuses"} {
		if !strings.Contains(sc.operatorOutput, want) {
			return fmt.Errorf("the operator's output does not say %q; it printed: %s", want, lastLines(sc.operatorOutput, 10))
		}
	}
	return nil
}

// DeleteOperatorKustomization deletes the Flux Kustomization that delivers the operator in
// every cluster, as removing it from the repository that holds the Flux objects would, and
// waits until Flux has finished with it (its finalizer garbage-collects what it applied). The
// operator's Deployment goes with it, so each cluster's operator is stopped, as its pod would
// be. The teardown delivers the operator again under its own name.
func (sc *Scenario) DeleteOperatorKustomization(ctx context.Context) error {
	if err := sc.saveOperatorKustomization(ctx); err != nil {
		return err
	}
	sc.OnTeardown("deliver the operator again under its own name", func(ctx context.Context) error {
		if sc.operatorKustomization == gitrepo.OperatorKustomization {
			return nil
		}
		return sc.RenameOperatorKustomization(ctx, sc.operatorKustomization, gitrepo.OperatorKustomization)
	})
	if err := sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, _ string, c client.Client) error {
		return deleteKustomization(ctx, c, gitrepo.OperatorKustomization)
	}); err != nil {
		return err
	}
	sc.operatorKustomization = ""
	if err := sc.awaitKustomizationGone(ctx, gitrepo.OperatorKustomization); err != nil {
		return err
	}
	for _, cl := range sc.Fed.Clusters() {
		if err := sc.Fed.Faults().Stop(ctx, testbed.FaultOperator, cl); err != nil {
			return fmt.Errorf("stop the operator of cluster %q, whose Deployment Flux deleted: %w", cl, err)
		}
	}
	return nil
}

// RenameOperatorKustomization gives the operator's Kustomization another name in every
// cluster, as a rename in Git does when Flux applies it: the new one is created and the old
// one ("" when it is already gone) deleted at once, before the new one has applied anything.
// It waits until the new one is Ready and the old one gone, then restarts each cluster's
// operator with a fresh token (its ServiceAccount may have been deleted and created again).
func (sc *Scenario) RenameOperatorKustomization(ctx context.Context, from, to string) error {
	if err := sc.saveOperatorKustomization(ctx); err != nil {
		return err
	}
	if err := sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		ks := &unstructured.Unstructured{}
		ks.SetGroupVersionKind(kustomizationGVK)
		ks.SetNamespace(testbed.FluxNamespace)
		ks.SetName(to)
		spec := sc.operatorKustomizations[cl]
		if err := unstructured.SetNestedField(ks.Object, spec, "spec"); err != nil {
			return err
		}
		if err := c.Create(ctx, ks); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create Kustomization %s: %w", operatorKustomizationKey(to), err)
		}
		if from == "" {
			return nil
		}
		return deleteKustomization(ctx, c, from)
	}); err != nil {
		return err
	}
	sc.operatorKustomization = to
	if from != "" {
		if err := sc.awaitKustomizationGone(ctx, from); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("the Kustomization %s to be Ready in every cluster", operatorKustomizationKey(to))
	if err := Await(ctx, sc.Config.Wait(WaitDelivery), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, _ string, c client.Client) error {
			ks := &unstructured.Unstructured{}
			ks.SetGroupVersionKind(kustomizationGVK)
			if err := c.Get(ctx, operatorKustomizationKey(to), ks); err != nil {
				return err
			}
			if !readyTrue(ks) {
				return errors.New(readyMessage(ks))
			}
			return nil
		})
	}); err != nil {
		return err
	}
	for _, cl := range sc.Fed.Clusters() {
		if err := sc.Fed.Faults().Stop(ctx, testbed.FaultOperator, cl); err != nil {
			return fmt.Errorf("stop the operator of cluster %q: %w", cl, err)
		}
		if err := sc.Fed.Faults().Start(ctx, testbed.FaultOperator, cl); err != nil {
			return fmt.Errorf("start the operator of cluster %q again: %w", cl, err)
		}
	}
	return nil
}

// saveOperatorKustomization remembers each cluster's operator Kustomization spec, once.
func (sc *Scenario) saveOperatorKustomization(ctx context.Context) error {
	if sc.operatorKustomizations != nil {
		return nil
	}
	sc.operatorKustomization = gitrepo.OperatorKustomization
	specs := map[string]map[string]any{}
	if err := sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		ks := &unstructured.Unstructured{}
		ks.SetGroupVersionKind(kustomizationGVK)
		if err := c.Get(ctx, operatorKustomizationKey(gitrepo.OperatorKustomization), ks); err != nil {
			return fmt.Errorf("get the operator's Kustomization %s: %w", operatorKustomizationKey(gitrepo.OperatorKustomization), err)
		}
		spec, _, err := unstructured.NestedMap(ks.Object, "spec")
		if err != nil {
			return err
		}
		specs[cl] = spec
		return nil
	}); err != nil {
		return err
	}
	sc.operatorKustomizations = specs
	return nil
}

func deleteKustomization(ctx context.Context, c client.Client, name string) error {
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	ks.SetNamespace(testbed.FluxNamespace)
	ks.SetName(name)
	if err := c.Delete(ctx, ks); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete Kustomization %s: %w", operatorKustomizationKey(name), err)
	}
	return nil
}

// awaitKustomizationGone waits until Flux has finalized (garbage-collected) the Kustomization.
func (sc *Scenario) awaitKustomizationGone(ctx context.Context, name string) error {
	what := fmt.Sprintf("Flux to finish deleting the Kustomization %s in every cluster", operatorKustomizationKey(name))
	return Await(ctx, sc.Config.Wait(WaitDelivery), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, _ string, c client.Client) error {
			ks := &unstructured.Unstructured{}
			ks.SetGroupVersionKind(kustomizationGVK)
			err := c.Get(ctx, operatorKustomizationKey(name), ks)
			if err == nil {
				return fmt.Errorf("still there (finalizers %v)", ks.GetFinalizers())
			}
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	})
}

// CheckNothingDeleted checks, for the whole hold window, that every cluster still has the
// Polykube CRDs and the Workload, neither being deleted, and that the Workload's Deployments
// keep their replicas and UIDs.
func (sc *Scenario) CheckNothingDeleted(ctx context.Context, workload string) error {
	crds := []string{"clustermembers", "federations", "workloads", "serviceendpoints", "datastorebindings"}
	what := fmt.Sprintf("the Polykube CRDs and the Workload %q to stay in every cluster", workload)
	if err := Hold(ctx, sc.Config.Wait(WaitHold), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, _ string, c client.Client) error {
			for _, plural := range crds {
				crd := &apiextensionsv1.CustomResourceDefinition{}
				name := plural + "." + polykubev1alpha1.GroupVersion.Group
				if err := c.Get(ctx, client.ObjectKey{Name: name}, crd); err != nil {
					return fmt.Errorf("get CRD %s: %w", name, err)
				}
				if crd.DeletionTimestamp != nil {
					return fmt.Errorf("CRD %s is being deleted", name)
				}
			}
			w := &polykubev1alpha1.Workload{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, w); err != nil {
				return fmt.Errorf("get Workload %s: %w", workload, err)
			}
			if w.DeletionTimestamp != nil {
				return fmt.Errorf("Workload %s is being deleted", workload)
			}
			return nil
		})
	}); err != nil {
		return err
	}
	return sc.CheckReplicasHold(ctx, workload, "while the operator's Kustomization is gone")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// DeleteWorkloadOrphaning deletes the cluster's copy of the Workload leaving its objects
// (kubectl delete --cascade=orphan), and waits until it is gone: the garbage collector has
// then removed the owner references from its Deployment and Service.
func (sc *Scenario) DeleteWorkloadOrphaning(ctx context.Context, workload, cluster string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	if err := sc.rememberPods(ctx, cluster, c, workload); err != nil {
		return err
	}
	w := &polykubev1alpha1.Workload{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, w); err != nil {
		return fmt.Errorf("get Workload %s in cluster %q: %w", workload, cluster, err)
	}
	if err := c.Delete(ctx, w, client.PropagationPolicy(metav1.DeletePropagationOrphan)); err != nil {
		return fmt.Errorf("delete Workload %s in cluster %q: %w", workload, cluster, err)
	}
	what := fmt.Sprintf("the Workload %s in cluster %q to be deleted, its objects orphaned", workload, cluster)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, &polykubev1alpha1.Workload{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("still there")
	})
}

// ReapplyIn asks the cluster's Flux to apply its last revision again (as it does at its
// interval) and waits until it did so successfully.
func (sc *Scenario) ReapplyIn(ctx context.Context, cluster string) error {
	token, err := sc.Fed.Git().RequestApply(ctx, cluster)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("Flux in cluster %q to apply its last revision again", cluster)
	return Await(ctx, sc.Config.Wait(WaitDelivery), what, func(ctx context.Context) error {
		handled, ready, msg, err := sc.Fed.Git().ApplyHandled(ctx, cluster, token)
		switch {
		case err != nil:
			return err
		case !handled:
			return errors.New("the request is not handled yet")
		case !ready:
			return fmt.Errorf("the apply failed: %s", msg)
		}
		return nil
	})
}

// rememberPods records the UIDs of the pods of the Workload's Deployment in the cluster.
func (sc *Scenario) rememberPods(ctx context.Context, cluster string, c client.Client, workload string) error {
	uids, err := sc.podUIDs(ctx, c, workload)
	if err != nil {
		return fmt.Errorf("cluster %q: %w", cluster, err)
	}
	if len(uids) == 0 {
		return fmt.Errorf("cluster %q has no pod of %q to remember", cluster, workload)
	}
	if sc.pods == nil {
		sc.pods = map[string][]string{}
	}
	sc.pods[cluster+"/"+workload] = uids
	return nil
}

// CheckPodsKept checks that the pods of the Workload's Deployment in the cluster are the ones
// rememberPods saw: none was restarted or replaced.
func (sc *Scenario) CheckPodsKept(ctx context.Context, workload, cluster string) error {
	before, ok := sc.pods[cluster+"/"+workload]
	if !ok {
		return fmt.Errorf("no pods of %q in cluster %q were remembered before", workload, cluster)
	}
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	now, err := sc.podUIDs(ctx, c, workload)
	if err != nil {
		return err
	}
	if !slices.Equal(before, now) {
		return fmt.Errorf("the pods of %q in cluster %q changed: UIDs %v before, %v now", workload, cluster, before, now)
	}
	return nil
}

// podUIDs lists the sorted UIDs of the running pods selected by the Workload's Deployment.
func (sc *Scenario) podUIDs(ctx context.Context, c client.Client, workload string) ([]string, error) {
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, d); err != nil {
		return nil, fmt.Errorf("get Deployment %s: %w", workload, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, err
	}
	var pods corev1.PodList
	if err := c.List(ctx, &pods, client.InNamespace(sc.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list the pods of Deployment %s: %w", workload, err)
	}
	var uids []string
	for _, p := range pods.Items {
		if p.DeletionTimestamp == nil {
			uids = append(uids, string(p.UID))
		}
	}
	slices.Sort(uids)
	return uids, nil
}

// mistakeState is what the operator mistakes the scenario made left to check or undo.
type mistakeState struct {
	// operatorOutput is what the last operator started as another member printed.
	operatorOutput string
	// identityRefused are the clusters where a replica refused its identity and whose operator
	// has not restarted as itself since (that resets the pinned member's condition).
	identityRefused []string
	// operatorKustomizations are the specs of each cluster's operator Kustomization, saved
	// before a step deletes or renames it.
	operatorKustomizations map[string]map[string]any
	// operatorKustomization is the operator Kustomization's name now ("" while deleted).
	operatorKustomization string
}
