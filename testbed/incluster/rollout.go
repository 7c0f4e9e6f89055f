package incluster

import (
	"context"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// waitOperators waits until the operator Deployment is available in every cluster.
func (b *Bed) waitOperators(ctx context.Context) error {
	d := b.state.Operator
	return b.WaitDeployment(ctx, d.Namespace, d.Name)
}

// WaitDeployment waits until a Deployment exists and is fully available in every member.
func (b *Bed) WaitDeployment(ctx context.Context, namespace, name string) error {
	if !b.env.Runner.Note("wait until Deployment %s/%s is available in every cluster", namespace, name) {
		return nil
	}
	for _, m := range b.env.Members {
		if err := b.waitDeployment(ctx, m, namespace, name); err != nil {
			return err
		}
	}
	return nil
}

// WaitDeploymentIn waits until a Deployment exists and is fully available in one member.
func (b *Bed) WaitDeploymentIn(ctx context.Context, cluster, namespace, name string) error {
	m, err := b.env.Member(cluster)
	if err != nil {
		return err
	}
	if !b.env.Runner.Note("wait until Deployment %s/%s is available in %s", namespace, name, m.Context) {
		return nil
	}
	return b.waitDeployment(ctx, m, namespace, name)
}

func (b *Bed) waitDeployment(ctx context.Context, m datapath.Member, namespace, name string) error {
	cl, err := b.env.Client(m)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("Deployment %s/%s in %s to be available", namespace, name, m.Name)
	return wait.For(ctx, b.env.Topology.Wait(topology.WaitRollout), what, func(ctx context.Context) error {
		var d appsv1.Deployment
		if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.AvailableReplicas < want || d.Status.UpdatedReplicas < want {
			return fmt.Errorf("%d of %d replicas available", d.Status.AvailableReplicas, want)
		}
		return nil
	})
}
