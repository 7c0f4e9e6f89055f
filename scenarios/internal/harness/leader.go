package harness

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
)

// RunOperatorWithLeaderElection restarts the cluster's operator with leader election on, as
// gitops/operator runs it; the teardown turns it off again. The test bed runs its operators
// without it (testbed.OperatorLeaderElection says why), so a scenario turns it on only in a
// cluster whose API server it does not stop.
func (sc *Scenario) RunOperatorWithLeaderElection(ctx context.Context, cluster string) error {
	lb, ok := sc.Fed.Faults().(testbed.OperatorLeaderElection)
	if !ok {
		return fmt.Errorf("the %s test bed cannot switch an operator's leader election (implemented on kwok, whose operators are host processes; the operator Deployment on kind elects a leader as gitops/operator ships it)", sc.Fed.Provider())
	}
	sc.OnTeardown("run the operator of "+cluster+" without leader election again", func(ctx context.Context) error {
		return lb.SetOperatorLeaderElection(ctx, cluster, false)
	})
	if err := lb.SetOperatorLeaderElection(ctx, cluster, true); err != nil {
		return fmt.Errorf("run the operator of cluster %q with leader election: %w", cluster, err)
	}
	return nil
}

// AwaitLeaseHeld waits until a Lease in the namespace of the cluster is held and was renewed
// in the last lease duration: the operator's replica leads.
func (sc *Scenario) AwaitLeaseHeld(ctx context.Context, cluster, namespace string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("a Lease in %s of cluster %q to be held by an operator replica", namespace, cluster)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		leases := &coordinationv1.LeaseList{}
		if err := c.List(ctx, leases, client.InNamespace(namespace)); err != nil {
			return err
		}
		var seen []string
		for _, l := range leases.Items {
			holder, renewed, dur := "", time.Time{}, 15*time.Second
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			if l.Spec.RenewTime != nil {
				renewed = l.Spec.RenewTime.Time
			}
			if l.Spec.LeaseDurationSeconds != nil {
				dur = time.Duration(*l.Spec.LeaseDurationSeconds) * time.Second
			}
			if holder != "" && time.Since(renewed) < dur {
				return nil
			}
			seen = append(seen, fmt.Sprintf("%s (holder %q, renewed %s)", l.Name, holder, renewed.Format(time.RFC3339)))
		}
		if len(seen) == 0 {
			return fmt.Errorf("no Lease in %s", namespace)
		}
		return fmt.Errorf("none held: %s", strings.Join(seen, ", "))
	})
}
