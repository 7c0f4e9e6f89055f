package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// DropMemberFromRoster commits a roster without the cluster's ClusterMember (a kustomize
// `$patch: delete` in the roster's kustomization.yaml, the roster file untouched) and waits
// until every cluster's delivery applied it and the member is gone everywhere. With Argo CD that
// is its automated prune, whose default propagation is foreground: the mistake of issue 33 (one
// commit that loses this cluster from the roster in every cluster at once). Before committing it
// remembers the pods of every Workload the scenario saw in that cluster, for
// CheckPodsKept. Teardown commits the roster as the topology has it again, if the scenario did not.
func (sc *Scenario) DropMemberFromRoster(ctx context.Context, member string) error {
	if !slices.Contains(sc.Fed.Clusters(), member) {
		return fmt.Errorf("the federation has no cluster %q (it has %v)", member, sc.Fed.Clusters())
	}
	c, err := sc.Clients.Admin(member)
	if err != nil {
		return err
	}
	for workload := range sc.deployments {
		if err := sc.rememberPods(ctx, member, c, workload); err != nil {
			return err
		}
	}
	patch := fmt.Sprintf("apiVersion: %s\nkind: ClusterMember\nmetadata:\n  name: %s\n$patch: delete\n",
		polykubev1alpha1.GroupVersion.String(), member)
	file := gitrepo.RosterDir + "/kustomization.yaml"
	dropped := gitrepo.RosterKustomization([]gitrepo.Patch{{Kind: "ClusterMember", Name: member, Patch: patch}})
	sc.rosterDropped = true
	sc.OnTeardown("the roster as the topology has it", func(ctx context.Context) error {
		if !sc.rosterDropped {
			return nil
		}
		return sc.RestoreRoster(ctx)
	})
	if err := sc.commitOutside(ctx, "scenarios: drop ClusterMember "+member+" from the roster", file, dropped); err != nil {
		return err
	}
	what := fmt.Sprintf("the ClusterMember %s to be pruned in every cluster", member)
	return Await(ctx, sc.Config.Wait(WaitDelivery), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			var m polykubev1alpha1.ClusterMember
			err := c.Get(ctx, client.ObjectKey{Name: member}, &m)
			if err == nil {
				return fmt.Errorf("ClusterMember %s is still there (deletion timestamp %v, finalizers %v)", member, m.DeletionTimestamp, m.Finalizers)
			}
			return client.IgnoreNotFound(err)
		})
	})
}

// RestoreRoster commits the roster as the topology has it and waits until every cluster has
// every member of the topology back.
func (sc *Scenario) RestoreRoster(ctx context.Context) error {
	file := gitrepo.RosterDir + "/kustomization.yaml"
	if err := sc.commitOutside(ctx, "scenarios: the roster as the topology has it", file, gitrepo.RosterKustomization(nil)); err != nil {
		return err
	}
	sc.rosterDropped = false
	return Await(ctx, sc.Config.Wait(WaitDelivery), "every cluster to have every ClusterMember of the topology", func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			var missing []string
			for _, member := range sc.Fed.Clusters() {
				var m polykubev1alpha1.ClusterMember
				if err := c.Get(ctx, client.ObjectKey{Name: member}, &m); err != nil {
					if client.IgnoreNotFound(err) != nil {
						return err
					}
					missing = append(missing, member)
				}
			}
			if len(missing) > 0 {
				return errors.New("no ClusterMember " + fmt.Sprint(missing))
			}
			return nil
		})
	})
}
