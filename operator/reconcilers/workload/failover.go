package workload

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/placement"
)

// failoverOutcome is what the failover step decided: the Deployment's replicas and when the
// hysteresis next changes (zero: nothing waits).
type failoverOutcome struct {
	replicas     int32
	requeueAfter time.Duration
}

// failover is the capacity failover step (decision 0006). Without spec.distribution.failover it
// returns the base share and clears status.failover. With it, it reads the peers' ready
// endpoints from the EndpointSlices Cilium mirrors for the ServiceEndpoint's Service, steps the
// hysteresis kept in status.failover, and returns base + extra. A view can only add replicas
// above the base: without a ServiceEndpoint the Deployment runs its base share.
func (r *Reconciler) failover(ctx context.Context, wl *polykubev1alpha1.Workload, roster []polykubev1alpha1.ClusterMember, alloc placement.Allocation, base int32) (failoverOutcome, error) {
	st := &wl.Status
	cfg, on, err := placement.FailoverFromWorkload(wl)
	if !on {
		st.Failover = nil
		meta.RemoveStatusCondition(&st.Conditions, polykubev1alpha1.FailoverReadyCondition)
		return failoverOutcome{replicas: base}, nil
	}
	cond := func(status metav1.ConditionStatus, reason, msg string) {
		setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.FailoverReadyCondition, status, reason, msg)
	}
	baseOnly := &polykubev1alpha1.FailoverStatus{BaseReplicas: base, EffectiveReplicas: base}
	if err != nil {
		st.Failover = baseOnly
		cond(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, fmt.Sprintf("%v; fix the Workload in Git", err))
		return failoverOutcome{replicas: base}, nil
	}

	service, err := r.failoverService(ctx, wl)
	if err != nil {
		return failoverOutcome{}, err
	}
	if service == "" {
		st.Failover = baseOnly
		cond(metav1.ConditionFalse, polykubev1alpha1.ReasonServiceEndpointMissing,
			"spec.distribution.failover needs a ServiceEndpoint whose workloadRef names this Workload: the peers are seen through its Service's mirrored EndpointSlices; running the base share")
		return failoverOutcome{replicas: base}, nil
	}

	var slices discoveryv1.EndpointSliceList
	if err := r.List(ctx, &slices, client.InNamespace(wl.Namespace), client.MatchingLabelsSelector{Selector: meshview.Selector(service)}); err != nil {
		return failoverOutcome{}, fmt.Errorf("list the mirrored EndpointSlices of Service %s/%s: %w", wl.Namespace, service, err)
	}
	ready := meshview.CountReady(slices.Items, types.NamespacedName{Namespace: wl.Namespace, Name: service}, r.ClusterName)
	observed := meshview.Deficits(alloc, ready, r.ClusterName)

	// metav1.Time keeps whole seconds: the state is stepped in whole seconds so that what the
	// status keeps is exactly the state (placement.FailoverStatusOf).
	now := r.now().Truncate(time.Second)
	prev := placement.FailoverStateFromStatus(st.Failover)
	next := placement.StepFailover(prev, now, observed, cfg.Timing)
	// The targets as the allocation resolved them (explicit and selected over the roster).
	spec, err := placement.SpecFromWorkloadIn(wl, roster)
	if err != nil {
		return failoverOutcome{}, reconcile.TerminalError(fmt.Errorf("plan the failover of Workload %s/%s: %w", wl.Namespace, wl.Name, err))
	}
	f, err := placement.FailoverFor(spec, r.ClusterName, next.Deficits(), cfg.MaxSurge)
	if err != nil {
		// The allocation succeeded and the cluster is a target: only a broken invariant gets here.
		return failoverOutcome{}, reconcile.TerminalError(fmt.Errorf("plan the failover of Workload %s/%s: %w", wl.Namespace, wl.Name, err))
	}
	st.Failover = placement.FailoverStatusOf(next, f)

	switch {
	case !prev.Active() && next.Active():
		r.event(wl, polykubev1alpha1.ReasonFailoverStarted, fmt.Sprintf("absorbing %s: running %d (base %d + extra %d)", deficitList(next), f.Replicas, f.Base, f.Extra))
	case prev.Active() && !next.Active():
		r.event(wl, polykubev1alpha1.ReasonFailoverEnded, fmt.Sprintf("every peer serves its share again: back to the base %d", f.Base))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Stepped failover", "service", service, "ready", ready.String(), "absorbed", deficitList(next), "replicas", f.Replicas)

	switch {
	case len(ready) == 0:
		cond(metav1.ConditionFalse, polykubev1alpha1.ReasonNoMeshView, fmt.Sprintf(
			"Service %s has no EndpointSlice mirrored from any peer: every peer counts as down (%s). If the peers are up, enable Cilium's endpoint-slice synchronisation (clustermesh.enableEndpointSliceSynchronization) with a non-zero clustermesh.cacheTTL",
			service, absorbMessage(next, f)))
	case next.Active():
		cond(metav1.ConditionTrue, polykubev1alpha1.ReasonFailoverActive, fmt.Sprintf("peers seen: %s; %s", ready, absorbMessage(next, f)))
	default:
		cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded, fmt.Sprintf("peers seen: %s; no deficit absorbed, running the base %d", ready, f.Base))
	}

	out := failoverOutcome{replicas: f.Replicas}
	if due, ok := next.NextChange(cfg.Timing); ok {
		// A second more than the wait: the state is stepped in whole seconds.
		out.requeueAfter = max(due.Sub(r.now()), 0) + time.Second
	}
	return out, nil
}

// failoverService is the name of the Service whose mirrored slices show the peers: that of the
// ServiceEndpoint exposing the Workload (the one of the Workload's own name first, else the
// first by name); "" when there is none.
func (r *Reconciler) failoverService(ctx context.Context, wl *polykubev1alpha1.Workload) (string, error) {
	var list polykubev1alpha1.ServiceEndpointList
	if err := r.List(ctx, &list, client.InNamespace(wl.Namespace)); err != nil {
		return "", fmt.Errorf("list ServiceEndpoints in %s: %w", wl.Namespace, err)
	}
	var names []string
	for _, se := range list.Items {
		if se.Spec.WorkloadRef.Name != wl.Name || !se.DeletionTimestamp.IsZero() {
			continue
		}
		if se.Name == wl.Name {
			return se.Name, nil
		}
		names = append(names, se.Name)
	}
	if len(names) == 0 {
		return "", nil
	}
	sort.Strings(names)
	return names[0], nil
}

// forEndpointSlice maps a Cilium-mirrored EndpointSlice to the Workloads of the ServiceEndpoint
// named like its Service.
func (r *Reconciler) forEndpointSlice(ctx context.Context, obj client.Object) []reconcile.Request {
	if obj.GetLabels()[discoveryv1.LabelManagedBy] != meshview.ManagedBy {
		return nil
	}
	name := obj.GetLabels()[discoveryv1.LabelServiceName]
	if name == "" {
		return nil
	}
	se := &polykubev1alpha1.ServiceEndpoint{}
	if err := r.Get(ctx, types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}, se); err != nil {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: se.Namespace, Name: se.Spec.WorkloadRef.Name}}}
}

func (r *Reconciler) event(wl *polykubev1alpha1.Workload, reason, note string) {
	if r.Recorder != nil {
		r.Recorder.Eventf(wl, nil, corev1.EventTypeNormal, reason, "Failover", note)
	}
}

func deficitList(s placement.FailoverState) string {
	var parts []string
	for _, p := range s.Peers {
		if p.Absorbed > 0 {
			parts = append(parts, fmt.Sprintf("%s missing %d", p.Cluster, p.Absorbed))
		}
	}
	if len(parts) == 0 {
		return "no peer"
	}
	return strings.Join(parts, ", ")
}

func absorbMessage(s placement.FailoverState, f placement.Failover) string {
	if !s.Active() {
		return fmt.Sprintf("no deficit absorbed yet, running the base %d", f.Base)
	}
	return fmt.Sprintf("absorbing %s: running %d (base %d + extra %d)", deficitList(s), f.Replicas, f.Base, f.Extra)
}
