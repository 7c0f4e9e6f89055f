package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed"
)

// StopAPIServer stops a cluster's API server; the scenario's teardown starts it again.
func (sc *Scenario) StopAPIServer(ctx context.Context, cluster string) error {
	sc.OnTeardown("start the API server of "+cluster, func(ctx context.Context) error {
		return sc.Fed.Faults().Start(ctx, testbed.FaultAPIServer, cluster)
	})
	sc.mark("api-stop:" + cluster)
	if err := sc.Fed.Faults().Stop(ctx, testbed.FaultAPIServer, cluster); err != nil {
		return fmt.Errorf("stop the API server of cluster %q: %w", cluster, err)
	}
	sc.mark("api-stopped:" + cluster)
	return nil
}

// StartAPIServer starts a stopped API server again, first remembering the state of every
// other cluster so CheckOthersUnchanged can tell whether its return disturbed them.
func (sc *Scenario) StartAPIServer(ctx context.Context, cluster string) error {
	for _, other := range sc.OtherClusters(cluster) {
		if err := sc.Remember(ctx, "return-of-"+cluster, other); err != nil {
			return err
		}
	}
	sc.mark("api-start:" + cluster)
	if err := sc.Fed.Faults().Start(ctx, testbed.FaultAPIServer, cluster); err != nil {
		return fmt.Errorf("start the API server of cluster %q: %w", cluster, err)
	}
	sc.mark("api-started:" + cluster)
	return nil
}

// CheckOthersUnchanged compares every other cluster with its state before cluster returned.
func (sc *Scenario) CheckOthersUnchanged(ctx context.Context, cluster string) error {
	var errs []error
	for _, other := range sc.OtherClusters(cluster) {
		errs = append(errs, sc.CheckUnchanged(ctx, "return-of-"+cluster, other))
	}
	return errors.Join(errs...)
}

// KillOperatorOnDelivery waits until the cluster's Flux has applied the scenario's last
// revision, then kills the cluster's operator at once, so it dies in the middle of acting on
// the change. The teardown restarts it.
func (sc *Scenario) KillOperatorOnDelivery(ctx context.Context, cluster string) error {
	if err := sc.AwaitDelivered(ctx, []string{cluster}, sc.Config.Wait(WaitDelivery)); err != nil {
		return err
	}
	sc.OnTeardown("restart the operator of "+cluster, func(ctx context.Context) error {
		return sc.Fed.Faults().Start(ctx, testbed.FaultOperator, cluster)
	})
	if err := sc.Fed.Faults().Stop(ctx, testbed.FaultOperator, cluster); err != nil {
		return fmt.Errorf("kill the operator of cluster %q: %w", cluster, err)
	}
	return nil
}

// RestartOperator starts a killed operator again.
func (sc *Scenario) RestartOperator(ctx context.Context, cluster string) error {
	if err := sc.Fed.Faults().Start(ctx, testbed.FaultOperator, cluster); err != nil {
		return fmt.Errorf("restart the operator of cluster %q: %w", cluster, err)
	}
	return nil
}

// StopGit stops the Git server; the teardown starts it again.
func (sc *Scenario) StopGit(ctx context.Context) error {
	sc.OnTeardown("start the Git server", func(ctx context.Context) error { return sc.Fed.Faults().Start(ctx, testbed.FaultGit, "") })
	if err := sc.Fed.Faults().Stop(ctx, testbed.FaultGit, ""); err != nil {
		return fmt.Errorf("stop the Git server: %w", err)
	}
	return nil
}

// StartGit starts the Git server again.
func (sc *Scenario) StartGit(ctx context.Context) error {
	if err := sc.Fed.Faults().Start(ctx, testbed.FaultGit, ""); err != nil {
		return fmt.Errorf("start the Git server: %w", err)
	}
	return nil
}

// Partition cuts the network between the cluster's nodes and every other cluster's; the
// teardown heals it. While it lasts, the routing steps expect the cluster and the others
// to see none of each other's backends (expectedBackends).
func (sc *Scenario) Partition(ctx context.Context, cluster string) error {
	sc.OnTeardown("heal the network partition of "+cluster, func(ctx context.Context) error {
		return sc.Fed.Faults().Start(ctx, testbed.FaultNetwork, cluster)
	})
	if err := sc.Fed.Faults().Stop(ctx, testbed.FaultNetwork, cluster); err != nil {
		return fmt.Errorf("partition cluster %q from the others: %w", cluster, err)
	}
	if !slices.Contains(sc.partitioned, cluster) {
		sc.partitioned = append(sc.partitioned, cluster)
	}
	return nil
}

// HealPartition ends the cluster's network partition.
func (sc *Scenario) HealPartition(ctx context.Context, cluster string) error {
	if err := sc.Fed.Faults().Start(ctx, testbed.FaultNetwork, cluster); err != nil {
		return fmt.Errorf("heal the network partition of cluster %q: %w", cluster, err)
	}
	sc.partitioned = slices.DeleteFunc(sc.partitioned, func(c string) bool { return c == cluster })
	return nil
}

// cutOff reports whether a network partition separates clusters a and b.
func (sc *Scenario) cutOff(a, b string) bool {
	return a != b && (slices.Contains(sc.partitioned, a) || slices.Contains(sc.partitioned, b))
}

// AwaitFetchFailing waits until every cluster's Flux reports that it cannot fetch from Git.
func (sc *Scenario) AwaitFetchFailing(ctx context.Context) error {
	return Await(ctx, sc.Config.Wait(WaitDelivery), "every cluster's Flux to report that it cannot fetch from Git", func(ctx context.Context) error {
		var ok []string
		for _, cl := range sc.Fed.Clusters() {
			_, fetchOK, err := sc.Fed.Git().AppliedRevision(ctx, cl)
			if err != nil {
				return fmt.Errorf("cluster %q: %w", cl, err)
			}
			if fetchOK {
				ok = append(ok, cl)
			}
		}
		if len(ok) > 0 {
			return fmt.Errorf("still fetching fine: %s", strings.Join(ok, ", "))
		}
		return nil
	})
}

// Member is a roster row as a feature states it.
type Member struct {
	Name      string
	ClusterID int32
	PodCIDR   string
}

// CheckRoster checks that every cluster holds a ClusterMember for each member with the stated
// cluster ID and first pod CIDR.
func (sc *Scenario) CheckRoster(ctx context.Context, members []Member) error {
	return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		var errs []error
		for _, m := range members {
			var cm polykubev1alpha1.ClusterMember
			if err := c.Get(ctx, client.ObjectKey{Name: m.Name}, &cm); err != nil {
				errs = append(errs, fmt.Errorf("ClusterMember %s: %w", m.Name, err))
				continue
			}
			if cm.Spec.Mesh.ClusterID != m.ClusterID || len(cm.Spec.Mesh.PodCIDRs) == 0 || cm.Spec.Mesh.PodCIDRs[0] != m.PodCIDR {
				errs = append(errs, fmt.Errorf("ClusterMember %s has cluster ID %d and pod CIDRs %v, the feature says %d and %s",
					m.Name, cm.Spec.Mesh.ClusterID, cm.Spec.Mesh.PodCIDRs, m.ClusterID, m.PodCIDR))
			}
		}
		return errors.Join(errs...)
	})
}

// ReapplyEverywhere asks every cluster's Flux to apply the revision it last fetched again, and
// waits until each has done so successfully: what a re-apply at the Kustomization's interval
// would do, made to happen now, so that a following hold covers it.
func (sc *Scenario) ReapplyEverywhere(ctx context.Context) error {
	tokens := map[string]string{}
	for _, cl := range sc.Fed.Clusters() {
		token, err := sc.Fed.Git().RequestApply(ctx, cl)
		if err != nil {
			return err
		}
		tokens[cl] = token
	}
	return Await(ctx, sc.Config.Wait(WaitDelivery), "every cluster's Flux to apply its last revision again", func(ctx context.Context) error {
		var pending []string
		for _, cl := range sc.Fed.Clusters() {
			handled, ready, msg, err := sc.Fed.Git().ApplyHandled(ctx, cl, tokens[cl])
			switch {
			case err != nil:
				pending = append(pending, fmt.Sprintf("%s: %v", cl, err))
			case !handled:
				pending = append(pending, cl+": not yet")
			case !ready:
				pending = append(pending, fmt.Sprintf("%s: applied but not Ready (%s)", cl, msg))
			}
		}
		if len(pending) > 0 {
			return errors.New(strings.Join(pending, "; "))
		}
		return nil
	})
}

// StopOperator stops the operator of cluster; the teardown starts it again.
func (sc *Scenario) StopOperator(ctx context.Context, cluster string) error {
	sc.OnTeardown("restart the operator of "+cluster, func(ctx context.Context) error {
		return sc.Fed.Faults().Start(ctx, testbed.FaultOperator, cluster)
	})
	if err := sc.Fed.Faults().Stop(ctx, testbed.FaultOperator, cluster); err != nil {
		return fmt.Errorf("stop the operator of cluster %q: %w", cluster, err)
	}
	return nil
}
