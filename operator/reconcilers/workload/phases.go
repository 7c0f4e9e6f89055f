package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/unmanaged"
	"github.com/polykube/polykube/placement"
)

// scope is what one reconcile of a Workload carries from phase to phase: the Workload (whose
// status the phases write), what each phase found, and the result so far.
type scope struct {
	wl  *polykubev1alpha1.Workload
	now metav1.Time
	// lastReplicas is what the previous reconcile gave the Deployment (lastWrittenReplicas),
	// read before this one changes the status.
	lastReplicas int32

	// allocate
	roster []polykubev1alpha1.ClusterMember
	// spec is the placement input, the targets resolved over the roster once per reconcile
	spec       placement.Spec
	alloc      placement.Allocation
	bounds     placement.BoundsAllocation
	autoscaled bool
	desired    int32 // this cluster's share
	targeted   bool
	here       placement.Bounds // this cluster's autoscaling bounds
	hpaHere    bool             // this cluster runs an HPA
	// identify
	member *polykubev1alpha1.ClusterMember
	// render
	effective corev1.PodTemplateSpec
	applied   []string
	// claim: the objects Polykube made for this Workload in this cluster (nil: none), and the
	// ones of its name that are not (conflicts) or are another cluster's (others).
	endpointService bool
	dep             *appsv1.Deployment
	svc             *corev1.Service
	hpa             *autoscalingv2.HorizontalPodAutoscaler
	conflicts       []string
	others          []string
	// bind
	bindings []binding
	// failover: the Deployment's replicas, the share plus what is absorbed
	replicas int32
	// apply: the HPAs Polykube did not make that scale the Deployment
	foreign []string

	result ctrl.Result
}

// ready sets the Workload's Ready condition.
func (s *scope) ready(status metav1.ConditionStatus, reason, msg string) {
	setCondition(&s.wl.Status.Conditions, s.wl.Generation, polykubev1alpha1.ReadyCondition, status, reason, msg)
}

// standDown reports that this cluster runs nothing for the Workload for now and says why: every
// target's allocation as computed, no observation of a local Deployment, nothing rendered.
func (s *scope) standDown(cluster string, status metav1.ConditionStatus, reason, msg string) {
	st := &s.wl.Status
	setAllocationStatus(st, s.alloc, s.bounds, cluster, nil, s.wl.Generation, s.now)
	st.ReadyReplicas, st.Phase = 0, ""
	st.AppliedOverrides, st.EffectiveTemplateHash, st.Autoscaling = nil, "", nil
	s.ready(status, reason, msg)
}

// requeueAfter asks for the reconcile to run again after d at the latest.
func (s *scope) requeueAfter(d time.Duration) {
	if d > 0 && (s.result.RequeueAfter == 0 || d < s.result.RequeueAfter) {
		s.result.RequeueAfter = d
	}
}

// waitForCache ends the reconcile to run it again in a second: a create found the object the
// cache did not show yet (errCacheBehind).
func (s *scope) waitForCache() (bool, error) {
	s.result = ctrl.Result{RequeueAfter: time.Second}
	return true, nil
}

// A phase is one step of the reconcile over the scope. It returns done when the reconcile
// ends with it (the Workload stands down here, or waits), with scope.result to return; an
// error ends it too (a TerminalError when only a change of the Workload helps). Every phase
// that stops sets Ready=False (or True for NotTargeted) with a reason of its own.
type phase struct {
	name string
	run  func(*Reconciler, context.Context, *scope) (done bool, err error)
}

// phases are the reconcile of a Workload in this cluster, in order.
var phases = []phase{
	// the allocation and bounds of every target, from the spec and the roster
	{"allocate", (*Reconciler).allocate},
	// this operator's ClusterMember: without it, nothing is changed here
	{"identify", (*Reconciler).identify},
	// the effective template, spec.template with the overrides that select this cluster
	{"render", (*Reconciler).render},
	// the Deployment, Service and HPA of the Workload's name: Polykube's, another cluster's, or foreign
	{"claim", (*Reconciler).claim},
	// not a target here: remove what this cluster ran for it
	{"retire", (*Reconciler).retire},
	// an object of the Workload's name that Polykube did not make: never adopted
	{"refuse", (*Reconciler).refuse},
	// the DatastoreBindings the local Secrets satisfy
	{"bind", (*Reconciler).bind},
	// capacity failover: base + what the peers miss
	{"failover", (*Reconciler).failoverPhase},
	// write the Deployment, the HPA and the Service
	{"apply", (*Reconciler).apply},
	// the local slice's status
	{"observe", (*Reconciler).observeSlice},
}

// reconcileNormal runs the phases in order until one is done or fails.
func (r *Reconciler) reconcileNormal(ctx context.Context, wl *polykubev1alpha1.Workload) (ctrl.Result, error) {
	st := &wl.Status
	s := &scope{wl: wl, now: metav1.NewTime(r.now()), lastReplicas: lastWrittenReplicas(st)}
	st.Cluster = r.ClusterName
	st.SpecHash = placement.SpecHash(wl.Spec)
	st.ObservedGeneration = wl.Generation
	for _, p := range phases {
		done, err := p.run(r, ctx, s)
		if err != nil {
			return ctrl.Result{}, err
		}
		if done {
			return s.result, nil
		}
	}
	return s.result, nil
}

// allocate computes the allocation, a pure function of the spec and the roster (the
// ClusterMembers in this cluster, which Git delivers alike to every cluster) that
// targetSelectors select from, and for an autoscaled Workload the bounds.
func (r *Reconciler) allocate(ctx context.Context, s *scope) (bool, error) {
	wl, st := s.wl, &s.wl.Status
	if placement.UsesRoster(wl) {
		// The roster is only read here (placement is pure): the cache's own objects, copied
		// once per change of the roster, not per reconcile (roster.go).
		roster, err := r.members(ctx)
		if err != nil {
			return true, fmt.Errorf("list ClusterMembers to resolve the targetSelectors of Workload %s/%s: %w", wl.Namespace, wl.Name, err)
		}
		s.roster = roster
	}
	// The targets are resolved once; the allocation, the bounds and the failover plan use them.
	spec, err := placement.SpecFromWorkloadIn(wl, s.roster)
	var alloc placement.Allocation
	if err == nil {
		alloc, err = placement.ForWorkloadSpec(wl, spec)
	}
	if errors.Is(err, placement.ErrNoTargets) {
		// Not a spec error: the roster may still be arriving. Leave what runs here as it is; a
		// ClusterMember that appears re-runs this reconcile.
		msg := fmt.Sprintf("%v; nothing is changed in this cluster until a ClusterMember matches", err)
		setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.AllocatedCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonNoTargets, msg)
		s.ready(metav1.ConditionFalse, polykubev1alpha1.ReasonNoTargets, msg)
		setAllocationStatus(st, nil, nil, "", nil, 0, s.now)
		st.DesiredReplicas = 0
		return true, nil
	}
	if err != nil {
		msg := fmt.Sprintf("spec.distribution cannot be allocated: %v; fix the Workload in Git", err)
		setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.AllocatedCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, msg)
		s.ready(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, msg)
		setAllocationStatus(st, nil, nil, "", nil, 0, s.now)
		st.DesiredReplicas, st.ReadyReplicas, st.Phase = 0, 0, ""
		st.AppliedOverrides, st.EffectiveTemplateHash, st.Autoscaling = nil, "", nil
		return true, reconcile.TerminalError(fmt.Errorf("allocate Workload %s/%s: %w", wl.Namespace, wl.Name, err))
	}
	s.spec, s.alloc = spec, alloc
	// An autoscaled Workload's allocation is its floors; its bounds come from the same split
	// (they cannot fail where the allocation did not).
	s.bounds, s.autoscaled, err = placement.BoundsForWorkloadSpec(wl, spec)
	if err != nil {
		return true, reconcile.TerminalError(fmt.Errorf("autoscaling bounds of Workload %s/%s: %w", wl.Namespace, wl.Name, err))
	}
	s.desired, s.targeted = alloc.For(r.ClusterName)
	s.here, _ = s.bounds.For(r.ClusterName)
	s.hpaHere = s.autoscaled && s.targeted && s.here.Autoscaled()
	setCondition(&st.Conditions, wl.Generation, polykubev1alpha1.AllocatedCondition, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded,
		allocationMessage(alloc, s.bounds))
	st.DesiredReplicas = s.desired
	return false, r.setTargetsKnown(ctx, wl, s.roster, placement.UsesRoster(wl))
}

// identify finds this operator's ClusterMember. Without it, or while it is terminating, the
// operator creates, changes and deletes nothing (ownMember).
func (r *Reconciler) identify(ctx context.Context, s *scope) (bool, error) {
	member, reason, msg, err := r.ownMember(ctx)
	if err != nil {
		return true, err
	}
	if member == nil {
		s.standDown(r.ClusterName, metav1.ConditionFalse, reason, msg)
		return true, nil
	}
	s.member = member
	return false, nil
}

// render computes the effective template, a pure function of the spec and this cluster's
// ClusterMember. An error depends on the spec alone (every cluster reports it) and leaves a
// running Deployment as it is.
func (r *Reconciler) render(_ context.Context, s *scope) (bool, error) {
	effective, applied, err := placement.EffectiveTemplate(s.wl.Spec, s.member)
	if err != nil {
		s.standDown(r.ClusterName, metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, fmt.Sprintf("%v; fix the Workload in Git", err))
		return true, reconcile.TerminalError(fmt.Errorf("render the template of Workload %s/%s: %w", s.wl.Namespace, s.wl.Name, err))
	}
	s.effective, s.applied = effective, applied
	return false, nil
}

// claim finds the Deployment, Service and HPA of the Workload's name and what each is to it
// (ownership.go). A ServiceEndpoint of the Workload's own name that exposes it provides the
// Service (a global one, in every member): the Workload then wants no Service of its own, and a
// foreign one is no conflict. Objects Polykube made for another cluster's name stop the
// reconcile: this operator may run under the wrong name.
func (r *Reconciler) claim(ctx context.Context, s *scope) (bool, error) {
	var err error
	if s.endpointService, err = r.serviceEndpointProvidesService(ctx, s.wl); err != nil {
		return true, err
	}
	wantsService := len(s.wl.Spec.Ports) > 0 && !s.endpointService
	dep, svc, hpa := &appsv1.Deployment{}, &corev1.Service{}, &autoscalingv2.HorizontalPodAutoscaler{}
	for _, c := range []struct {
		obj, probe client.Object
		wanted     bool
		found      func()
	}{
		{dep, unmanaged.Deployment(), true, func() { s.dep = dep }},
		{svc, unmanaged.Service(), wantsService, func() { s.svc = svc }},
		{hpa, &autoscalingv2.HorizontalPodAutoscaler{}, s.hpaHere, func() { s.hpa = hpa }},
	} {
		ours, conflict, other, err := r.ownershipOf(ctx, s.wl, c.obj, c.probe, c.wanted)
		if err != nil {
			return true, err
		}
		if ours {
			c.found()
		}
		if conflict != "" {
			s.conflicts = append(s.conflicts, conflict)
		}
		if other != "" {
			s.others = append(s.others, other)
		}
	}
	if len(s.others) > 0 {
		s.standDown(r.ClusterName, metav1.ConditionFalse, polykubev1alpha1.ReasonIdentityMismatch, otherClusterMessage(s.others, r.ClusterName))
		return true, nil
	}
	return false, nil
}

// retire removes what this cluster ran for a Workload it is not a target of. Objects of the
// same name that Polykube did not make are no concern of a Workload that runs nothing here.
func (r *Reconciler) retire(ctx context.Context, s *scope) (bool, error) {
	if s.targeted {
		return false, nil
	}
	if err := r.deleteOwned(ctx, s.dep, s.svc, s.hpa); err != nil {
		return true, err
	}
	s.wl.Status.Failover = nil
	meta.RemoveStatusCondition(&s.wl.Status.Conditions, polykubev1alpha1.FailoverReadyCondition)
	s.standDown(r.ClusterName, metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted,
		fmt.Sprintf("cluster %q is not a target of this Workload; nothing runs here", r.ClusterName))
	return true, nil
}

// refuse stops at an object of the Workload's name that Polykube did not make for it: Polykube
// never adopts objects.
func (r *Reconciler) refuse(_ context.Context, s *scope) (bool, error) {
	if len(s.conflicts) == 0 {
		return false, nil
	}
	s.standDown(r.ClusterName, metav1.ConditionFalse, polykubev1alpha1.ReasonConflict, fmt.Sprintf(
		"%s already exist(s) and %s not created by Polykube for this Workload; Polykube never adopts objects: delete or rename them, or rename the Workload",
		strings.Join(s.conflicts, " and "), pluralIs(len(s.conflicts))))
	return true, nil
}

// bind finds which DatastoreBindings the local Secrets satisfy, reports env vars they replace,
// and re-checks a missing Secret later (Secrets are not watched).
func (r *Reconciler) bind(ctx context.Context, s *scope) (bool, error) {
	bindings, unresolved, err := r.bindings(ctx, s.wl)
	if err != nil {
		return true, err
	}
	s.bindings = bindings
	st := &s.wl.Status
	if status, reason, msg, ok := envCondition(s.effective.Spec.Containers, bindings); ok {
		setCondition(&st.Conditions, s.wl.Generation, polykubev1alpha1.EnvVarsUniqueCondition, status, reason, msg)
	} else {
		meta.RemoveStatusCondition(&st.Conditions, polykubev1alpha1.EnvVarsUniqueCondition)
	}
	if unresolved {
		s.requeueAfter(r.secretRecheck())
	}
	return false, nil
}

// failoverPhase is capacity failover, when the Workload opts in: base + what this cluster's
// view of the mesh says its peers miss, capped (failover.go). Without it, the replicas are the
// allocation.
func (r *Reconciler) failoverPhase(ctx context.Context, s *scope) (bool, error) {
	fo, err := r.failover(ctx, s.wl, s.spec, s.alloc, s.desired)
	if err != nil {
		return true, err
	}
	s.replicas = fo.replicas
	s.requeueAfter(fo.requeueAfter)
	return false, nil
}

// apply writes the Deployment (from the effective template), its HPA and the Service. With an
// HPA here the HPA owns the Deployment's replicas (writesReplicas); so does an HPA Polykube did
// not make that scales the Deployment (foreignhpa.go).
func (r *Reconciler) apply(ctx context.Context, s *scope) (bool, error) {
	wl, st := s.wl, &s.wl.Status
	st.AppliedOverrides, st.EffectiveTemplateHash = s.applied, placement.TemplateHash(s.effective)
	var err error
	if s.foreign, err = r.foreignHPAs(ctx, wl, s.hpa); err != nil {
		return true, err
	}
	manageReplicas := s.dep == nil || (len(s.foreign) == 0 && writesReplicas(s.hpaHere, s.hpa != nil, ptr.Deref(s.dep.Spec.Replicas, 1)))
	s.dep, err = r.applyDeployment(ctx, wl, s.effective, s.replicas, manageReplicas, s.lastReplicas, s.bindings, s.dep)
	switch {
	case errors.Is(err, errCacheBehind):
		return s.waitForCache()
	case apierrors.IsInvalid(err):
		// Template content the Workload's schema accepts and the Deployment API refuses: only a
		// change of the Workload helps, so it is not retried. A running Deployment stays as it is.
		s.ready(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec, fmt.Sprintf(
			"the API server refused the Deployment rendered from spec.template (with this cluster's overrides): %v; fix spec.template or spec.overrides in Git", err))
		return true, reconcile.TerminalError(err)
	case err != nil:
		return true, err
	}
	if s.autoscaled || s.hpa != nil {
		err := r.applyHPA(ctx, wl, s.here, s.hpaHere, s.hpa)
		switch {
		case errors.Is(err, errCacheBehind):
			return s.waitForCache()
		case apierrors.IsInvalid(err):
			st.Autoscaling = nil
			s.ready(metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec,
				fmt.Sprintf("the API server refused the HorizontalPodAutoscaler of spec.autoscaling: %v; fix spec.autoscaling in Git", err))
			return true, reconcile.TerminalError(fmt.Errorf("apply the HorizontalPodAutoscaler of Workload %s/%s: %w", wl.Namespace, wl.Name, err))
		case err != nil:
			return true, err
		}
	}
	if s.endpointService {
		// Hand the name over: remove a Service this Workload made before the ServiceEndpoint came.
		if err := r.deleteOwned(ctx, nil, s.svc, nil); err != nil {
			return true, err
		}
	} else if err := r.applyService(ctx, wl, s.svc); errors.Is(err, errCacheBehind) {
		return s.waitForCache()
	} else if err != nil {
		return true, err
	}
	return false, nil
}

// observeSlice reports the local slice. Scaled by an HPA, the Deployment's own replicas are what it
// should run: desired = current, within this cluster's bounds; scaled by a foreign HPA, what it
// runs is reported against them too.
func (r *Reconciler) observeSlice(ctx context.Context, s *scope) (bool, error) {
	st := &s.wl.Status
	want := s.replicas
	st.Autoscaling = nil
	if s.autoscaled {
		current := ptr.Deref(s.dep.Spec.Replicas, 1)
		st.Autoscaling = autoscalingStatus(s.here, current)
		if s.hpaHere {
			want = current
			st.DesiredReplicas = current
		}
	}
	if len(s.foreign) > 0 && !s.hpaHere {
		want = ptr.Deref(s.dep.Spec.Replicas, 1)
	}
	obs := observe(s.dep, want)
	if s.hpaHere || len(s.foreign) > 0 {
		obs.Current = ptr.To(want)
	}
	setAllocationStatus(st, s.alloc, s.bounds, r.ClusterName, &obs, s.wl.Generation, s.now)
	st.ReadyReplicas, st.Phase = obs.Ready, obs.Phase
	if len(s.foreign) > 0 {
		s.ready(metav1.ConditionFalse, polykubev1alpha1.ReasonForeignHPA, foreignHPAMessage(s.wl, s.foreign, want, s.replicas, s.autoscaled))
	} else {
		s.ready(readyFromPhase(s.wl, obs, want))
	}
	ctrl.LoggerFrom(ctx).V(1).Info("Reconciled Workload", "desiredReplicas", s.desired, "phase", obs.Phase, "appliedOverrides", s.applied)
	return true, nil
}
