package harness

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// CommitSuspend sets spec.suspend of the scenario's Workload and commits it to Git, as a person
// pausing the operator for an incident would.
func (sc *Scenario) CommitSuspend(ctx context.Context, workload string, suspended bool) error {
	w, err := sc.Workload(workload)
	if err != nil {
		return err
	}
	w.Spec.Suspend = suspended
	return sc.CommitWorkload(ctx, workload)
}

// AwaitSuspended waits until every cluster's operator has observed the generation of the
// Workload that Git last delivered, with spec.suspend true, and reports Ready Unknown/Suspended
// for that generation. Waiting on the observed generation, not on time, is what proves the
// operator saw the spec and chose to stand back: a later check that a hand edit stayed then
// means something.
func (sc *Scenario) AwaitSuspended(ctx context.Context, workload string) error {
	what := fmt.Sprintf("every cluster's operator to report the Workload %q suspended for the generation Git delivered", workload)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			// Not workloadProcessed: a Workload suspended from its first commit never gets
			// status.cluster, which only a reconcile that acts writes.
			var w polykubev1alpha1.Workload
			if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, &w); err != nil {
				return fmt.Errorf("get Workload %s: %w", workload, err)
			}
			if want, ok := sc.Workloads[workload]; ok && (!equalDistribution(want.Spec.Distribution, w.Spec.Distribution) || !w.Spec.Suspend) {
				return fmt.Errorf("Workload %s does not have the spec the scenario last committed yet%s", workload, fluxNotReady(ctx, c))
			}
			if w.Status.ObservedGeneration != w.Generation {
				return fmt.Errorf("Workload %s generation %d not yet processed (status.observedGeneration %d)", workload, w.Generation, w.Status.ObservedGeneration)
			}
			return checkSuspended(&w)
		})
	})
}

// checkSuspended checks that the Workload's own copy is suspended and its Ready condition says
// so for its current generation.
func checkSuspended(w *polykubev1alpha1.Workload) error {
	if !w.Spec.Suspend {
		return fmt.Errorf("Workload %s has spec.suspend false", w.Name)
	}
	ready := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.ReadyCondition)
	if ready == nil {
		return fmt.Errorf("Workload %s has no Ready condition", w.Name)
	}
	if ready.Status != metav1.ConditionUnknown || ready.Reason != polykubev1alpha1.ReasonSuspended || ready.ObservedGeneration != w.Generation {
		return fmt.Errorf("Workload %s Ready=%s reason %s for generation %d (generation is %d), want Unknown reason %s",
			w.Name, ready.Status, ready.Reason, ready.ObservedGeneration, w.Generation, polykubev1alpha1.ReasonSuspended)
	}
	return nil
}
