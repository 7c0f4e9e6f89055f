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

// InjectFault puts fault f in effect (in cluster, for a per-cluster fault; "" otherwise) and
// has the scenario's teardown end it: the one way a scenario breaks part of the federation.
// It marks the timeline "<fault>-stop:<cluster>" before and "<fault>-stopped:<cluster>" after,
// and records the fault as in effect until EndFault.
func (sc *Scenario) InjectFault(ctx context.Context, f testbed.Fault, cluster string) error {
	k, err := testbed.KindOf(f)
	if err != nil {
		return err
	}
	sc.OnTeardown("start "+k.Target(cluster), func(ctx context.Context) error { return sc.Fed.Faults().Start(ctx, f, cluster) })
	sc.mark(string(f) + "-stop:" + cluster)
	if err := sc.Fed.Faults().Stop(ctx, f, cluster); err != nil {
		return fmt.Errorf("stop %s: %w", k.Target(cluster), err)
	}
	sc.mark(string(f) + "-stopped:" + cluster)
	sc.faults.inEffect = append(sc.faults.inEffect, faultIn{f, cluster})
	return nil
}

// EndFault ends fault f (in cluster), marking "<fault>-start:<cluster>" and
// "<fault>-started:<cluster>" on the timeline.
func (sc *Scenario) EndFault(ctx context.Context, f testbed.Fault, cluster string) error {
	k, err := testbed.KindOf(f)
	if err != nil {
		return err
	}
	sc.mark(string(f) + "-start:" + cluster)
	if err := sc.Fed.Faults().Start(ctx, f, cluster); err != nil {
		return fmt.Errorf("start %s again: %w", k.Target(cluster), err)
	}
	sc.mark(string(f) + "-started:" + cluster)
	sc.faults.inEffect = slices.DeleteFunc(sc.faults.inEffect, func(in faultIn) bool { return in == faultIn{f, cluster} })
	return nil
}

// faultIn is a fault the scenario put in effect, and where.
type faultIn struct {
	fault   testbed.Fault
	cluster string
}

// faultState is what the scenario broke and has not repaired yet.
type faultState struct {
	// inEffect are the faults InjectFault put in effect and EndFault has not ended.
	inEffect []faultIn
}

// inEffect reports whether the scenario put fault f in effect in cluster and has not ended it.
func (sc *Scenario) inEffect(f testbed.Fault, cluster string) bool {
	return slices.Contains(sc.faults.inEffect, faultIn{f, cluster})
}

// StartAPIServer starts a stopped API server again, first remembering the state of every
// other cluster so CheckOthersUnchanged can tell whether its return disturbed them.
func (sc *Scenario) StartAPIServer(ctx context.Context, cluster string) error {
	for _, other := range sc.OtherClusters(cluster) {
		if err := sc.Remember(ctx, "return-of-"+cluster, other); err != nil {
			return err
		}
	}
	return sc.EndFault(ctx, testbed.FaultAPIServer, cluster)
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
	return sc.InjectFault(ctx, testbed.FaultOperator, cluster)
}

// cutOff reports whether a network partition separates clusters a and b: one of them is
// partitioned from every other cluster (the network fault).
func (sc *Scenario) cutOff(a, b string) bool {
	return a != b && (sc.inEffect(testbed.FaultNetwork, a) || sc.inEffect(testbed.FaultNetwork, b))
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
