package workload

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

func dep(generation, observed int64, replicas, ready, updated int32, conds ...appsv1.DeploymentCondition) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	d.Generation = generation
	d.Spec.Replicas = ptr.To(replicas)
	d.Status = appsv1.DeploymentStatus{
		ObservedGeneration: observed, Replicas: replicas, ReadyReplicas: ready, UpdatedReplicas: updated,
		AvailableReplicas: ready, Conditions: conds,
	}
	return d
}

func TestDeploymentPhase(t *testing.T) {
	failure := appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue}
	stalled := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse}
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue}
	tests := []struct {
		name    string
		dep     *appsv1.Deployment
		desired int32
		want    string
	}{
		{"no status yet", dep(1, 0, 3, 0, 0), 3, polykubev1alpha1.PhasePending},
		{"all ready and updated", dep(1, 1, 3, 3, 3, progressing), 3, polykubev1alpha1.PhaseReady},
		{"zero replicas observed", dep(1, 1, 0, 0, 0), 0, polykubev1alpha1.PhaseReady},
		{"some ready", dep(1, 1, 3, 1, 3, progressing), 3, polykubev1alpha1.PhaseProgressing},
		{"ready but not updated", dep(2, 2, 3, 3, 1), 3, polykubev1alpha1.PhaseProgressing},
		{"status of an older generation", dep(2, 1, 3, 3, 3), 3, polykubev1alpha1.PhaseProgressing},
		{"scaling down: old replicas still counted", dep(1, 1, 4, 3, 3), 3, polykubev1alpha1.PhaseProgressing},
		{"replica failure", dep(1, 1, 3, 1, 3, failure), 3, polykubev1alpha1.PhaseDegraded},
		{"progress deadline exceeded", dep(1, 1, 3, 3, 3, stalled), 3, polykubev1alpha1.PhaseDegraded},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(deploymentPhase(tt.dep, tt.desired)).To(Equal(tt.want))
		})
	}
}

func TestObserve(t *testing.T) {
	g := NewWithT(t)
	g.Expect(observe(nil, 2)).To(Equal(observation{Phase: polykubev1alpha1.PhasePending}))
	g.Expect(observe(dep(1, 1, 2, 1, 2), 2)).To(Equal(observation{Ready: 1, Available: 1, Updated: 2, Phase: polykubev1alpha1.PhaseProgressing}))
}

func TestLocalTarget(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	alloc := placement.Allocation{{Cluster: "east", Replicas: 2}, {Cluster: "west", Replicas: 1}}
	obs := &observation{Ready: 1, Available: 1, Updated: 2, Phase: polykubev1alpha1.PhaseProgressing}
	local := polykubev1alpha1.TargetStatus{
		Cluster: "east", DesiredReplicas: 2, Local: true, ReadyReplicas: ptr.To[int32](1),
		AvailableReplicas: ptr.To[int32](1), UpdatedReplicas: ptr.To[int32](2),
		Phase: polykubev1alpha1.PhaseProgressing, ObservedGeneration: 3, LastUpdateTime: &t0,
	}
	withTime := func(s polykubev1alpha1.TargetStatus, tm metav1.Time) *polykubev1alpha1.TargetStatus {
		s.LastUpdateTime = &tm
		return &s
	}

	tests := []struct {
		name    string
		cluster string
		obs     *observation
		gen     int64
		prev    *polykubev1alpha1.TargetStatus
		want    *polykubev1alpha1.TargetStatus
	}{
		{name: "first report stamps the local entry", cluster: "east", obs: obs, gen: 3, want: withTime(local, t1)},
		{name: "unchanged entry keeps its time", cluster: "east", obs: obs, gen: 3, prev: &local, want: &local},
		{
			name: "new generation moves the time", cluster: "east", obs: obs, gen: 4, prev: &local,
			want: func() *polykubev1alpha1.TargetStatus {
				l := withTime(local, t1)
				l.ObservedGeneration = 4
				return l
			}(),
		},
		{
			name: "changed observation moves the time", cluster: "east",
			obs: &observation{Ready: 2, Available: 2, Updated: 2, Phase: polykubev1alpha1.PhaseReady}, gen: 3, prev: &local,
			want: func() *polykubev1alpha1.TargetStatus {
				l := withTime(local, t1)
				l.ReadyReplicas, l.AvailableReplicas, l.Phase = ptr.To[int32](2), ptr.To[int32](2), polykubev1alpha1.PhaseReady
				return l
			}(),
		},
		{name: "not a target: no local entry", cluster: "north", obs: nil, gen: 3},
		{
			name: "no observation (cluster unknown, conflict): local entry without replicas", cluster: "west", obs: nil, gen: 3,
			want: withTime(polykubev1alpha1.TargetStatus{Cluster: "west", DesiredReplicas: 1, Local: true}, t1),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := localTarget(alloc, nil, tt.cluster, tt.obs, tt.gen, tt.prev, t1)
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

// An autoscaled Workload's local entry carries the bounds computed here and the Deployment's
// current replicas; a change of those moves the entry's time.
func TestLocalTarget_Autoscaled(t *testing.T) {
	g := NewWithT(t)
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	bounds := placement.BoundsAllocation{{Cluster: "east", MinShare: 2, Min: 2, Max: 10}, {Cluster: "west", MinShare: 0, Min: 1, Max: 5}}
	obs := &observation{Ready: 4, Available: 4, Updated: 4, Phase: polykubev1alpha1.PhaseReady, Current: ptr.To[int32](4)}

	got := localTarget(bounds.Floors(), bounds, "east", obs, 1, nil, t0)
	g.Expect(got).To(Equal(&polykubev1alpha1.TargetStatus{
		Cluster: "east", DesiredReplicas: 2, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](10), Local: true,
		ReadyReplicas: ptr.To[int32](4), AvailableReplicas: ptr.To[int32](4), UpdatedReplicas: ptr.To[int32](4), CurrentReplicas: ptr.To[int32](4),
		Phase: polykubev1alpha1.PhaseReady, ObservedGeneration: 1, LastUpdateTime: &t0,
	}))
	g.Expect(localTarget(bounds.Floors(), bounds, "east", obs, 1, got, t1).LastUpdateTime).To(Equal(&t0), "unchanged")
	scaled := *obs
	scaled.Current = ptr.To[int32](6)
	g.Expect(localTarget(bounds.Floors(), bounds, "east", &scaled, 1, got, t1).LastUpdateTime).To(Equal(&t1), "the HPA scaled")
}

// setAllocationStatus writes the layout of decision 0013 whatever the status held before: the
// full list an operator of the previous release wrote is cleared (its local entry's time kept
// when nothing changed), and the status has the same size at 3 and at 511 targets.
func TestSetAllocationStatus(t *testing.T) {
	g := NewWithT(t)
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	obs := &observation{Ready: 2, Available: 2, Updated: 2, Phase: polykubev1alpha1.PhaseReady}
	alloc := placement.Allocation{{Cluster: "east", Replicas: 2}, {Cluster: "north", Replicas: 0}, {Cluster: "west", Replicas: 1}}

	// As the previous release wrote it: every target, the local one observed.
	old := polykubev1alpha1.WorkloadStatus{Targets: []polykubev1alpha1.TargetStatus{
		{Cluster: "east", DesiredReplicas: 2, Local: true, ReadyReplicas: ptr.To[int32](2), AvailableReplicas: ptr.To[int32](2),
			UpdatedReplicas: ptr.To[int32](2), Phase: polykubev1alpha1.PhaseReady, ObservedGeneration: 1, LastUpdateTime: &t0},
		{Cluster: "north", DesiredReplicas: 0}, {Cluster: "west", DesiredReplicas: 1},
	}}
	st := old
	setAllocationStatus(&st, alloc, nil, "east", obs, 1, t1)
	g.Expect(st.Targets).To(BeNil(), "the previous release's list is cleared")
	g.Expect(st.Local).To(Equal(&old.Targets[0]), "the local entry as it was, its time kept")
	g.Expect(st.Allocation).To(Equal(&polykubev1alpha1.AllocationDigest{Digest: placement.AllocationDigest(alloc), Targets: 3, TargetsWithReplicas: 2}))

	setAllocationStatus(&st, nil, nil, "east", obs, 1, t1)
	g.Expect(st.Local).To(BeNil())
	g.Expect(st.Allocation).To(BeNil())

	size := func(n int) int {
		var a placement.Allocation
		for i := range n {
			a = append(a, placement.Share{Cluster: fmt.Sprintf("member-%03d-abcdefghijklmnopqrstu", i), Replicas: 2})
		}
		var st polykubev1alpha1.WorkloadStatus
		setAllocationStatus(&st, a, nil, a[0].Cluster, obs, 1, t1)
		raw, err := json.Marshal(st)
		g.Expect(err).NotTo(HaveOccurred())
		return len(raw)
	}
	// The same fields at both sizes; only the two counts gain digits.
	g.Expect(size(511)).To(BeNumerically("<=", size(3)+4), "the status does not grow with the roster")
}

func TestReadyFromPhase(t *testing.T) {
	wl := &polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}}
	tests := []struct {
		obs        observation
		wantStatus metav1.ConditionStatus
		wantReason string
		wantInMsg  string
	}{
		{observation{Phase: polykubev1alpha1.PhaseReady, Ready: 3, Updated: 3}, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded, "3/3 replicas ready"},
		{observation{Phase: polykubev1alpha1.PhaseProgressing, Ready: 1, Updated: 2}, metav1.ConditionFalse, polykubev1alpha1.ReasonProgressing, "1/3 replicas ready, 2 updated"},
		{observation{Phase: polykubev1alpha1.PhaseDegraded, Ready: 0}, metav1.ConditionFalse, polykubev1alpha1.ReasonDegraded, "kubectl describe deployment -n shop api"},
		{observation{Phase: polykubev1alpha1.PhasePending}, metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending, "no status yet"},
	}
	for _, tt := range tests {
		t.Run(tt.obs.Phase, func(t *testing.T) {
			g := NewWithT(t)
			status, reason, msg := readyFromPhase(wl, tt.obs, 3)
			g.Expect(status).To(Equal(tt.wantStatus))
			g.Expect(reason).To(Equal(tt.wantReason))
			g.Expect(msg).To(ContainSubstring(tt.wantInMsg))
			g.Expect(msg).To(ContainSubstring("shop/api"))
		})
	}
}

func TestSetConditionKeepsTransitionTime(t *testing.T) {
	g := NewWithT(t)
	var conds []metav1.Condition
	setCondition(&conds, 1, polykubev1alpha1.ReadyCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonProgressing, "a")
	first := conds[0].LastTransitionTime
	before := append([]metav1.Condition(nil), conds...)
	setCondition(&conds, 1, polykubev1alpha1.ReadyCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonProgressing, "a")
	g.Expect(conds).To(Equal(before), "setting the same condition again must change nothing (steady state writes nothing)")
	setCondition(&conds, 2, polykubev1alpha1.ReadyCondition, metav1.ConditionFalse, polykubev1alpha1.ReasonDegraded, "b")
	g.Expect(conds[0].LastTransitionTime).To(Equal(first), "same status keeps the transition time")
	g.Expect(conds[0].ObservedGeneration).To(Equal(int64(2)))
}
