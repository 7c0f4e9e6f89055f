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
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
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

// failover is the capacity failover step (decisions 0006 and 0009). Without
// spec.distribution.failover it returns the base share and clears status.failover. With it, it
// reads the peers' ready endpoints from the EndpointSlices Cilium mirrors for the Service of a
// global ServiceEndpoint that exposes the Workload and is not in Conflict, steps the hysteresis
// kept in status.failover, and returns base + extra. Without such a ServiceEndpoint, or when no
// peer target's slice is mirrored, there is no view: what is absorbed is held and nothing new
// is absorbed (placement.HoldFailover), so a lost view never turns into a fleet-wide surge.
//
// The status it writes changes only when a decision does (what is absorbed or waits, the
// signal, the sources that are no target): it carries no live count, so a peer's pods coming
// and going above its share write nothing. Every list in it is bounded (listed).
//
// spec is the placement input the allocation was computed from (the targets as it resolved
// them, explicit and selected over the roster).
func (r *Reconciler) failover(ctx context.Context, wl *polykubev1alpha1.Workload, spec placement.Spec, alloc placement.Allocation, base int32) (failoverOutcome, error) {
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
	if err != nil {
		st.Failover = &polykubev1alpha1.FailoverStatus{BaseReplicas: base, EffectiveReplicas: base}
		cond(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, fmt.Sprintf("%v; fix the Workload in Git", err))
		return failoverOutcome{replicas: base}, nil
	}
	prev := placement.FailoverStateFromStatus(st.Failover)
	prevHandover := placement.HandoverFromStatus(st.Failover)
	before, beforeDigest := allocationWritten(st)
	// plan sets status.failover from the failover's next state and the handover's (decision
	// 0011: after the roster grew, this cluster keeps its previous share until the new targets
	// serve theirs); the Deployment runs the larger of the two.
	plan := func(next placement.FailoverState, ho placement.Handover) (placement.Failover, error) {
		f, err := placement.FailoverFor(spec, r.ClusterName, next.Deficits(), cfg.MaxSurge)
		if err != nil {
			// The allocation succeeded and the cluster is a target: only a broken invariant gets here.
			return f, reconcile.TerminalError(fmt.Errorf("plan the failover of Workload %s/%s: %w", wl.Namespace, wl.Name, err))
		}
		st.Failover = placement.FailoverStatusOf(next, f)
		st.Failover.Handover = placement.HandoverStatusOf(ho, maxListed)
		if ho.Held > f.Replicas {
			f.Replicas = ho.Held
			st.Failover.EffectiveReplicas = ho.Held
		}
		r.handoverEvent(wl, prevHandover, ho, f)
		return f, nil
	}
	handover := func(seen bool, ready meshview.Ready) placement.Handover {
		return placement.StepHandover(prevHandover, r.now().Truncate(time.Second), placement.HandoverView{
			Self: r.ClusterName, Before: before, BeforeDigest: beforeDigest, Now: alloc, Seen: seen, Ready: ready, Timeout: cfg.HandoverTimeout,
		})
	}

	service, passedOver, err := r.failoverService(ctx, wl)
	if err != nil {
		return failoverOutcome{}, err
	}
	if service == "" {
		next := placement.HoldFailover(prev)
		ho := handover(false, nil)
		f, err := plan(next, ho)
		if err != nil {
			return failoverOutcome{}, err
		}
		msg := "spec.distribution.failover needs a global ServiceEndpoint that is not in Conflict and whose workloadRef names this Workload: the peers are seen through its Service's mirrored EndpointSlices"
		if len(passedOver) > 0 {
			msg += "; passed over: " + listed(passedOver, len(passedOver))
		}
		cond(metav1.ConditionFalse, polykubev1alpha1.ReasonServiceEndpointMissing, msg+"; without a view "+holdMessage(next, f)+handoverMessage(ho))
		return withHandoverRequeue(failoverOutcome{replicas: f.Replicas}, ho, r.now()), nil
	}

	var slices discoveryv1.EndpointSliceList
	// Only counted, never changed: the cache's objects without a deep copy of each peer's slice,
	// found through the index (meshview.Selector's slices), not by matching every slice of the
	// namespace.
	if err := r.List(ctx, &slices, client.InNamespace(wl.Namespace), client.MatchingFields{MirroredSliceIndex: service}, client.UnsafeDisableDeepCopy); err != nil {
		return failoverOutcome{}, fmt.Errorf("list the mirrored EndpointSlices of Service %s/%s: %w", wl.Namespace, service, err)
	}
	ready := meshview.CountReady(slices.Items, types.NamespacedName{Namespace: wl.Namespace, Name: service}, r.ClusterName)
	peers, strangers := meshview.Split(ready, alloc, r.ClusterName)
	view := len(peers) > 0

	// metav1.Time keeps whole seconds: the state is stepped in whole seconds so that what the
	// status keeps is exactly the state (placement.FailoverStatusOf).
	now := r.now().Truncate(time.Second)
	next := placement.HoldFailover(prev)
	if view {
		next = placement.StepFailover(prev, now, meshview.Deficits(alloc, peers, r.ClusterName), cfg.Timing)
	}
	ho := handover(view, peers)
	f, err := plan(next, ho)
	if err != nil {
		return failoverOutcome{}, err
	}

	switch {
	case !prev.Active() && next.Active():
		r.event(wl, polykubev1alpha1.ReasonFailoverStarted, fmt.Sprintf("absorbing %s: running %d (base %d + extra %d)", deficitList(next), f.Replicas, f.Base, f.Extra))
	case prev.Active() && !next.Active():
		r.event(wl, polykubev1alpha1.ReasonFailoverEnded, fmt.Sprintf("every peer serves its share again: back to the base %d", f.Base))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Stepped failover", "service", service, "view", view, "ready", ready.String(), "absorbed", deficitList(next), "replicas", f.Replicas)

	misnamed := ""
	if len(strangers) > 0 {
		what := "is no target"
		if len(strangers) > 1 {
			what = "are no targets"
		}
		misnamed = fmt.Sprintf(". Slices are mirrored from %s, which %s of this Workload: is Cilium's cluster.name the ClusterMember name?",
			listed(strangers, len(strangers)), what)
	}
	switch {
	case !view:
		cond(metav1.ConditionFalse, polykubev1alpha1.ReasonNoMeshView, fmt.Sprintf(
			"Service %s has no EndpointSlice mirrored from a peer target: without a view %s. If the peers are up, enable Cilium's endpoint-slice synchronisation (clustermesh.enableEndpointSliceSynchronization) with a non-zero clustermesh.cacheTTL%s%s",
			service, holdMessage(next, f), misnamed, handoverMessage(ho)))
	case next.Active():
		cond(metav1.ConditionTrue, polykubev1alpha1.ReasonFailoverActive, absorbMessage(next, f)+misnamed+handoverMessage(ho))
	default:
		cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded, fmt.Sprintf("no deficit absorbed, running the base %d%s%s", f.Base, misnamed, handoverMessage(ho)))
	}

	out := failoverOutcome{replicas: f.Replicas}
	if due, ok := next.NextChange(cfg.Timing); ok {
		// A second more than the wait: the state is stepped in whole seconds.
		out.requeueAfter = max(due.Sub(r.now()), 0) + time.Second
	}
	return withHandoverRequeue(out, ho, r.now()), nil
}

// allocationWritten is what the status says of the allocation this cluster last wrote, before
// this reconcile rewrites it: what the handover compares the new allocation with. An operator
// of an earlier release wrote every target's share (status.targets); this one writes its own
// entry and a digest (decision 0013).
func allocationWritten(st *polykubev1alpha1.WorkloadStatus) (map[string]int32, *placement.PreviousAllocation) {
	if len(st.Targets) > 0 {
		m := make(map[string]int32, len(st.Targets))
		for _, t := range st.Targets {
			m[t.Cluster] = t.DesiredReplicas
		}
		return m, nil
	}
	if st.Allocation == nil {
		return nil, nil
	}
	prev := &placement.PreviousAllocation{TargetsWithReplicas: int(st.Allocation.TargetsWithReplicas)}
	if st.Local != nil {
		prev.Self, prev.Targeted = st.Local.DesiredReplicas, true
	}
	return nil, prev
}

// withHandoverRequeue requeues no later than the handover's deadline (a second after it: the
// state is stepped in whole seconds).
func withHandoverRequeue(out failoverOutcome, ho placement.Handover, now time.Time) failoverOutcome {
	if until, ok := ho.NextChange(); ok {
		d := max(until.Sub(now), 0) + time.Second
		if out.requeueAfter == 0 || d < out.requeueAfter {
			out.requeueAfter = d
		}
	}
	return out
}

// handoverMessage is what a condition adds while a handover holds the previous share.
func handoverMessage(ho placement.Handover) string {
	if !ho.Active() {
		return ""
	}
	return fmt.Sprintf("; the roster grew: this cluster keeps its previous share of %d until every peer target serves its share (waiting for %s), at most until %s",
		ho.Held, listed(ho.Waiting, len(ho.Waiting)), ho.Until.UTC().Format(time.RFC3339))
}

// handoverEvent records a handover that starts or ends.
func (r *Reconciler) handoverEvent(wl *polykubev1alpha1.Workload, prev, next placement.Handover, f placement.Failover) {
	switch {
	case !prev.Active() && next.Active():
		r.event(wl, polykubev1alpha1.ReasonHandoverStarted, fmt.Sprintf("the roster grew: keeping the previous share of %d (base now %d) until every peer target serves its share (waiting for %s), at most until %s",
			next.Held, f.Base, listed(next.Waiting, len(next.Waiting)), next.Until.UTC().Format(time.RFC3339)))
	case prev.Active() && !next.Active():
		r.event(wl, polykubev1alpha1.ReasonHandoverEnded, fmt.Sprintf("handover over: running %d (base %d)", f.Replicas, f.Base))
	}
}

// failoverService is the name of the Service whose mirrored slices show the peers: that of a
// global ServiceEndpoint exposing the Workload that is not in Conflict (the one of the
// Workload's own name first, else the first by name); "" when there is none. A ServiceEndpoint
// that is not global has no peers' endpoints mirrored, and one in Conflict does not own its
// Service (the slices may be another Service's): counting either would show every peer down.
// passedOver describes the ServiceEndpoints of the Workload that were not chosen for that.
func (r *Reconciler) failoverService(ctx context.Context, wl *polykubev1alpha1.Workload) (service string, passedOver []string, err error) {
	var list polykubev1alpha1.ServiceEndpointList
	if err := r.List(ctx, &list, client.InNamespace(wl.Namespace)); err != nil {
		return "", nil, fmt.Errorf("list ServiceEndpoints in %s: %w", wl.Namespace, err)
	}
	var names []string
	for _, se := range list.Items {
		if se.Spec.WorkloadRef.Name != wl.Name || !se.DeletionTimestamp.IsZero() {
			continue
		}
		switch {
		case !ptr.Deref(se.Spec.Global, true):
			passedOver = append(passedOver, se.Name+" (global: false)")
		case inConflict(&se):
			passedOver = append(passedOver, se.Name+" (Conflict)")
		case se.Name == wl.Name:
			return se.Name, nil, nil
		default:
			names = append(names, se.Name)
		}
	}
	if len(names) == 0 {
		sort.Strings(passedOver)
		return "", passedOver, nil
	}
	sort.Strings(names)
	return names[0], nil, nil
}

// inConflict reports whether the ServiceEndpoint's Service is not its own (Ready=False/Conflict).
func inConflict(se *polykubev1alpha1.ServiceEndpoint) bool {
	c := meta.FindStatusCondition(se.Status.Conditions, polykubev1alpha1.ReadyCondition)
	return c != nil && c.Reason == polykubev1alpha1.ReasonConflict
}

// serviceEndpointSignalChanged passes the ServiceEndpoint events that can change which one
// shows a Workload's peers: a new generation (workloadRef, global), or a Conflict that starts or
// ends (a status change: the ServiceEndpoint reconciler finds the conflict after the spec).
var serviceEndpointSignalChanged = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		o, okOld := e.ObjectOld.(*polykubev1alpha1.ServiceEndpoint)
		n, okNew := e.ObjectNew.(*polykubev1alpha1.ServiceEndpoint)
		if !okOld || !okNew {
			return true
		}
		return o.Generation != n.Generation || inConflict(o) != inConflict(n)
	},
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
		r.Recorder.Eventf(wl, nil, corev1.EventTypeNormal, reason, "Failover", "%s", note)
	}
}

// maxListed is how many names a message or event note lists before "and N more": with names
// of up to 32 characters (ClusterMesh's limit) a note stays under the 1 KiB the Events API
// takes, and a message does not grow with the fleet.
const maxListed = 10

// listed joins the first maxListed of items, of n in all, adding "and N more" for the rest.
func listed(items []string, n int) string {
	s := strings.Join(items[:min(len(items), maxListed)], ", ")
	if more := n - min(len(items), maxListed); more > 0 {
		s += fmt.Sprintf(" and %d more", more)
	}
	return s
}

// deficitList names the absorbed deficits, bounded by listed.
func deficitList(s placement.FailoverState) string {
	var parts []string
	n := 0
	for _, p := range s.Peers {
		if p.Absorbed > 0 {
			n++
			if len(parts) < maxListed {
				parts = append(parts, fmt.Sprintf("%s missing %d", p.Cluster, p.Absorbed))
			}
		}
	}
	if n == 0 {
		return "no peer"
	}
	return listed(parts, n)
}

func absorbMessage(s placement.FailoverState, f placement.Failover) string {
	if !s.Active() {
		return fmt.Sprintf("no deficit absorbed yet, running the base %d", f.Base)
	}
	return fmt.Sprintf("absorbing %s: running %d (base %d + extra %d)", deficitList(s), f.Replicas, f.Base, f.Extra)
}

// holdMessage says what a cluster without a view of its peers does.
func holdMessage(s placement.FailoverState, f placement.Failover) string {
	if !s.Active() {
		return fmt.Sprintf("this cluster absorbs no new deficit and holds what it absorbed: nothing, running the base %d", f.Base)
	}
	return fmt.Sprintf("this cluster absorbs no new deficit and holds what it absorbed (%s): running %d (base %d + extra %d) until the view returns",
		deficitList(s), f.Replicas, f.Base, f.Extra)
}
