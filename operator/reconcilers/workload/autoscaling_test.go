package workload

import (
	"testing"

	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

func TestWritesReplicas(t *testing.T) {
	tests := []struct {
		name               string
		hpaHere, hpaExists bool
		current            int32
		want               bool
	}{
		{"no HPA here: the operator keeps the allocation", false, false, 5, true},
		{"no HPA here, a leftover HPA is about to go", false, true, 5, true},
		{"the HPA scales it", true, true, 7, false},
		{"the HPA was deleted by hand: recreated, replicas kept", true, false, 7, false},
		{"a Deployment at 0 that an HPA is created for is lifted to the minimum", true, false, 0, true},
		{"a Deployment an existing HPA leaves at 0 (paused by hand) stays", true, true, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(writesReplicas(tt.hpaHere, tt.hpaExists, tt.current)).To(Equal(tt.want))
		})
	}
}

func TestDesiredHPA(t *testing.T) {
	g := NewWithT(t)
	wl := &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: "uid-1"},
		Spec: polykubev1alpha1.WorkloadSpec{Autoscaling: &polykubev1alpha1.Autoscaling{
			MinReplicas: ptr.To[int32](4), MaxReplicas: ptr.To[int32](20),
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)},
			}}},
			Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](60)}},
		}},
	}
	h := desiredHPA(wl, "east", placement.Bounds{Cluster: "east", MinShare: 0, Min: 1, Max: 7})
	g.Expect(h.Name).To(Equal("api"))
	g.Expect(h.Namespace).To(Equal("shop"))
	g.Expect(h.Labels).To(Equal(ownedLabels(wl, "east")))
	g.Expect(h.OwnerReferences).To(ConsistOf(ownerRef(wl)))
	g.Expect(h.Spec.ScaleTargetRef).To(Equal(autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"}))
	g.Expect(h.Spec.MinReplicas).To(HaveValue(Equal(int32(1))))
	g.Expect(h.Spec.MaxReplicas).To(Equal(int32(7)))
	g.Expect(h.Spec.Metrics).To(Equal(wl.Spec.Autoscaling.Metrics))
	g.Expect(h.Spec.Behavior).To(Equal(wl.Spec.Autoscaling.Behavior))
	g.Expect(h.Annotations[TemplateHashAnnotation]).NotTo(BeEmpty())

	// The HPA shares no memory with the spec.
	h.Spec.Metrics[0].Resource.Target.AverageUtilization = ptr.To[int32](10)
	*h.Spec.Behavior.ScaleDown.StabilizationWindowSeconds = 1
	g.Expect(*wl.Spec.Autoscaling.Metrics[0].Resource.Target.AverageUtilization).To(Equal(int32(70)))
	g.Expect(*wl.Spec.Autoscaling.Behavior.ScaleDown.StabilizationWindowSeconds).To(Equal(int32(60)))

	// Up to date: what was written, with fields the API server defaulted; not after a hand edit
	// of the bounds or target, or a change of the spec.
	want := desiredHPA(wl, "east", placement.Bounds{Cluster: "east", Min: 2, Max: 7})
	have := want.DeepCopy()
	have.Spec.Behavior.ScaleUp = &autoscalingv2.HPAScalingRules{SelectPolicy: ptr.To(autoscalingv2.MaxChangePolicySelect)}
	have.Spec.Metrics[0].Resource.Target.AverageValue = ptr.To(resource.MustParse("0"))
	g.Expect(hpaUpToDate(have, want)).To(BeTrue())
	edited := have.DeepCopy()
	edited.Spec.MaxReplicas = 100
	g.Expect(hpaUpToDate(edited, want)).To(BeFalse(), "maxReplicas edited by hand")
	edited = have.DeepCopy()
	edited.Spec.MinReplicas = nil
	g.Expect(hpaUpToDate(edited, want)).To(BeFalse(), "minReplicas removed by hand (defaults to 1)")
	edited = have.DeepCopy()
	edited.Spec.ScaleTargetRef.Name = "other"
	g.Expect(hpaUpToDate(edited, want)).To(BeFalse(), "target edited by hand")
	g.Expect(hpaUpToDate(have, desiredHPA(wl, "east", placement.Bounds{Cluster: "east", Min: 2, Max: 8}))).To(BeFalse(), "new bounds")
}

func TestHPASpecOrOwnershipChanged(t *testing.T) {
	g := NewWithT(t)
	old := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Name: "api", Labels: map[string]string{"a": "b"}},
		Spec:       autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: ptr.To[int32](2), MaxReplicas: 6},
	}
	update := func(mutate func(h *autoscalingv2.HorizontalPodAutoscaler)) bool {
		n := old.DeepCopy()
		mutate(n)
		return hpaSpecOrOwnershipChanged.Update(event.UpdateEvent{ObjectOld: old, ObjectNew: n})
	}
	g.Expect(update(func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.Status.CurrentReplicas, h.Status.DesiredReplicas = 4, 5
		h.ResourceVersion = "2"
	})).To(BeFalse(), "the HPA controller's status writes")
	g.Expect(update(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Spec.MaxReplicas = 100 })).To(BeTrue(), "a hand edit")
	g.Expect(update(func(h *autoscalingv2.HorizontalPodAutoscaler) { h.Labels = nil })).To(BeTrue(), "labels")
	g.Expect(update(func(h *autoscalingv2.HorizontalPodAutoscaler) {
		h.OwnerReferences = []metav1.OwnerReference{{Name: "x"}}
	})).To(BeTrue(), "owners")
	g.Expect(hpaSpecOrOwnershipChanged.Delete(event.DeleteEvent{Object: old})).To(BeTrue(), "a deletion by hand")
}
