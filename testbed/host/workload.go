package host

import (
	"context"
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// WaitReconciled waits until the operator of each named cluster (default: all) reconciled
// the current generation of the Workload: its status reports the cluster's share of the
// allocation as desired and as ready, and the local Deployment (if the share is above zero)
// has that many ready replicas.
func (tb *Testbed) WaitReconciled(ctx context.Context, namespace, name string, clusters ...string) error {
	if len(clusters) == 0 {
		clusters = tb.state.Topology.ClusterNames()
	}
	errs := make(chan error, len(clusters))
	for _, cluster := range clusters {
		go func() {
			cl, err := tb.Client(cluster)
			if err != nil {
				errs <- err
				return
			}
			errs <- wait.For(ctx, tb.wait(topology.WaitReconciled),
				fmt.Sprintf("the operator of %s to reconcile Workload %s/%s", cluster, namespace, name),
				func(ctx context.Context) error { return workloadReconciled(ctx, cl, cluster, namespace, name) })
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

func workloadReconciled(ctx context.Context, cl client.Client, cluster, namespace, name string) error {
	w := &polykubev1alpha1.Workload{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, w); err != nil {
		return err
	}
	var roster []polykubev1alpha1.ClusterMember
	if placement.UsesRoster(w) {
		list := &polykubev1alpha1.ClusterMemberList{}
		if err := cl.List(ctx, list); err != nil {
			return fmt.Errorf("list ClusterMembers to resolve the Workload's targetSelectors: %w", err)
		}
		roster = list.Items
	}
	alloc, err := placement.ForWorkloadIn(w, roster)
	if errors.Is(err, placement.ErrNoTargets) {
		return err // the roster may still be arriving
	}
	if err != nil {
		return wait.Stop(fmt.Errorf("the Workload's spec allocates nothing: %w", err))
	}
	want, _ := alloc.For(cluster)
	st := w.Status
	switch {
	case st.ObservedGeneration != w.Generation:
		return fmt.Errorf("status is for generation %d, the spec is at %d", st.ObservedGeneration, w.Generation)
	case st.DesiredReplicas != want:
		return fmt.Errorf("status.desiredReplicas is %d, the allocation gives %s %d", st.DesiredReplicas, cluster, want)
	case st.ReadyReplicas != want:
		return fmt.Errorf("status.readyReplicas is %d of %d", st.ReadyReplicas, want)
	}
	if want == 0 {
		return nil
	}
	d := &appsv1.Deployment{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("no Deployment %s/%s yet", namespace, name)
		}
		return err
	}
	if d.Spec.Replicas == nil || *d.Spec.Replicas != want || d.Status.ReadyReplicas != want {
		return fmt.Errorf("Deployment has %d of %d replicas ready", d.Status.ReadyReplicas, want)
	}
	return nil
}
