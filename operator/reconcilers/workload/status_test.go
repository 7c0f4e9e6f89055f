package workload

import (
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

func TestTargetStatuses(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	alloc := placement.Allocation{{Cluster: "east", Replicas: 2}, {Cluster: "west", Replicas: 1}}
	obs := &observation{Ready: 1, Available: 1, Updated: 2, Phase: polykubev1alpha1.PhaseProgressing}
	local := polykubev1alpha1.TargetStatus{
		Cluster: "east", DesiredReplicas: 2, Local: true, ReadyReplicas: ptr.To[int32](1),
		AvailableReplicas: ptr.To[int32](1), UpdatedReplicas: ptr.To[int32](2),
		Phase: polykubev1alpha1.PhaseProgressing, ObservedGeneration: 3, LastUpdateTime: &t0,
	}
	west := polykubev1alpha1.TargetStatus{Cluster: "west", DesiredReplicas: 1}
	withTime := func(s polykubev1alpha1.TargetStatus, tm metav1.Time) polykubev1alpha1.TargetStatus {
		s.LastUpdateTime = &tm
		return s
	}

	tests := []struct {
		name    string
		cluster string
		obs     *observation
		gen     int64
		prev    []polykubev1alpha1.TargetStatus
		want    []polykubev1alpha1.TargetStatus
	}{
		{
			name: "first report stamps the local entry", cluster: "east", obs: obs, gen: 3,
			want: []polykubev1alpha1.TargetStatus{withTime(local, t1), west},
		},
		{
			name: "unchanged entry keeps its time", cluster: "east", obs: obs, gen: 3,
			prev: []polykubev1alpha1.TargetStatus{local, west},
			want: []polykubev1alpha1.TargetStatus{local, west},
		},
		{
			name: "new generation moves the time", cluster: "east", obs: obs, gen: 4,
			prev: []polykubev1alpha1.TargetStatus{local, west},
			want: []polykubev1alpha1.TargetStatus{func() polykubev1alpha1.TargetStatus {
				l := withTime(local, t1)
				l.ObservedGeneration = 4
				return l
			}(), west},
		},
		{
			name: "changed observation moves the time", cluster: "east",
			obs: &observation{Ready: 2, Available: 2, Updated: 2, Phase: polykubev1alpha1.PhaseReady}, gen: 3,
			prev: []polykubev1alpha1.TargetStatus{local, west},
			want: []polykubev1alpha1.TargetStatus{func() polykubev1alpha1.TargetStatus {
				l := withTime(local, t1)
				l.ReadyReplicas, l.AvailableReplicas, l.Phase = ptr.To[int32](2), ptr.To[int32](2), polykubev1alpha1.PhaseReady
				return l
			}(), west},
		},
		{
			name: "not a target: no local entry", cluster: "north", obs: nil, gen: 3,
			want: []polykubev1alpha1.TargetStatus{{Cluster: "east", DesiredReplicas: 2}, west},
		},
		{
			name: "no observation (cluster unknown, conflict): local entry without replicas", cluster: "west", obs: nil, gen: 3,
			want: []polykubev1alpha1.TargetStatus{{Cluster: "east", DesiredReplicas: 2}, withTime(polykubev1alpha1.TargetStatus{Cluster: "west", DesiredReplicas: 1, Local: true}, t1)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := targetStatuses(alloc, nil, tt.cluster, tt.obs, tt.gen, tt.prev, t1)
			NewWithT(t).Expect(got).To(Equal(tt.want))
		})
	}
}

// An autoscaled Workload's targets carry the bounds computed here, and the local entry the
// Deployment's current replicas; a change of those moves the local entry's time.
func TestTargetStatuses_Autoscaled(t *testing.T) {
	g := NewWithT(t)
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	bounds := placement.BoundsAllocation{{Cluster: "east", MinShare: 2, Min: 2, Max: 10}, {Cluster: "west", MinShare: 0, Min: 1, Max: 5}}
	obs := &observation{Ready: 4, Available: 4, Updated: 4, Phase: polykubev1alpha1.PhaseReady, Current: ptr.To[int32](4)}

	got := targetStatuses(bounds.Floors(), bounds, "east", obs, 1, nil, t0)
	g.Expect(got).To(Equal([]polykubev1alpha1.TargetStatus{
		{
			Cluster: "east", DesiredReplicas: 2, MinReplicas: ptr.To[int32](2), MaxReplicas: ptr.To[int32](10), Local: true,
			ReadyReplicas: ptr.To[int32](4), AvailableReplicas: ptr.To[int32](4), UpdatedReplicas: ptr.To[int32](4), CurrentReplicas: ptr.To[int32](4),
			Phase: polykubev1alpha1.PhaseReady, ObservedGeneration: 1, LastUpdateTime: &t0,
		},
		{Cluster: "west", DesiredReplicas: 1, MinReplicas: ptr.To[int32](1), MaxReplicas: ptr.To[int32](5)},
	}))
	g.Expect(targetStatuses(bounds.Floors(), bounds, "east", obs, 1, got, t1)[0].LastUpdateTime).To(Equal(&t0), "unchanged")
	scaled := *obs
	scaled.Current = ptr.To[int32](6)
	g.Expect(targetStatuses(bounds.Floors(), bounds, "east", &scaled, 1, got, t1)[0].LastUpdateTime).To(Equal(&t1), "the HPA scaled")
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
