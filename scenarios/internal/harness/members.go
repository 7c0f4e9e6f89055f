package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// holdFinalizer keeps a deleted ClusterMember terminating, as Argo CD's foreground prune (or any
// controller's finalizer) does.
const holdFinalizer = "scenarios.polykube.kismet.io/hold"

// DeleteMemberHeld deletes a ClusterMember in one cluster while a finalizer holds it, so that it
// stays terminating, and waits until the cluster shows it so. Teardown releases it and has Flux
// deliver the roster again, waiting until the member is back, so the next scenario sees the
// whole roster.
func (sc *Scenario) DeleteMemberHeld(ctx context.Context, member, cluster string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	m := &polykubev1alpha1.ClusterMember{}
	if err := c.Get(ctx, client.ObjectKey{Name: member}, m); err != nil {
		return fmt.Errorf("get ClusterMember %s in cluster %q: %w", member, cluster, err)
	}
	held := m.DeepCopy()
	if !slices.Contains(held.Finalizers, holdFinalizer) {
		held.Finalizers = append(held.Finalizers, holdFinalizer)
	}
	if err := c.Patch(ctx, held, client.MergeFrom(m)); err != nil {
		return fmt.Errorf("add a finalizer to ClusterMember %s in cluster %q: %w", member, cluster, err)
	}
	sc.OnTeardown(fmt.Sprintf("the held deletion of ClusterMember %s in cluster %q", member, cluster), func(ctx context.Context) error {
		if err := sc.ReleaseMember(ctx, member, cluster); err != nil {
			return err
		}
		if err := sc.ReapplyIn(ctx, cluster); err != nil {
			return err
		}
		return sc.AwaitMemberPresent(ctx, cluster, member)
	})
	if err := c.Delete(ctx, held); err != nil {
		return fmt.Errorf("delete ClusterMember %s in cluster %q: %w", member, cluster, err)
	}
	what := fmt.Sprintf("ClusterMember %s in cluster %q to be terminating", member, cluster)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		got := &polykubev1alpha1.ClusterMember{}
		if err := c.Get(ctx, client.ObjectKey{Name: member}, got); err != nil {
			return err
		}
		if got.DeletionTimestamp.IsZero() {
			return errors.New("it has no deletionTimestamp yet")
		}
		return nil
	})
}

// ReleaseMember removes the finalizer DeleteMemberHeld added, and waits until the ClusterMember
// is gone (a member not held is fine).
func (sc *Scenario) ReleaseMember(ctx context.Context, member, cluster string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	m := &polykubev1alpha1.ClusterMember{}
	if err := c.Get(ctx, client.ObjectKey{Name: member}, m); err != nil {
		return client.IgnoreNotFound(err)
	}
	if i := slices.Index(m.Finalizers, holdFinalizer); i >= 0 {
		released := m.DeepCopy()
		released.Finalizers = slices.Delete(released.Finalizers, i, i+1)
		if err := c.Patch(ctx, released, client.MergeFrom(m)); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("remove the finalizer of ClusterMember %s in cluster %q: %w", member, cluster, err)
		}
	}
	if m.DeletionTimestamp.IsZero() {
		return nil
	}
	what := fmt.Sprintf("ClusterMember %s in cluster %q to be gone once released", member, cluster)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		err := c.Get(ctx, client.ObjectKey{Name: member}, &polykubev1alpha1.ClusterMember{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("still there")
	})
}

// AwaitMemberPresent waits until the cluster has the ClusterMember, not terminating.
func (sc *Scenario) AwaitMemberPresent(ctx context.Context, cluster, member string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("ClusterMember %s in cluster %q to be there again", member, cluster)
	return Await(ctx, sc.Config.Wait(WaitDelivery), what, func(ctx context.Context) error {
		m := &polykubev1alpha1.ClusterMember{}
		if err := c.Get(ctx, client.ObjectKey{Name: member}, m); err != nil {
			return err
		}
		if !m.DeletionTimestamp.IsZero() {
			return errors.New("it is terminating")
		}
		return nil
	})
}
