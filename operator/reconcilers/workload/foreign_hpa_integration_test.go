package workload_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

// Issue 33, defect 4: an HPA that Polykube did not make (KEDA names its HPA keda-hpa-<name>;
// kubectl autoscale names it after the Deployment) scales the Deployment of a Workload without
// spec.autoscaling. The operator used to revert the HPA's replicas at each sync, so pods started
// and died; now it says so, naming the HPA and what to do, and leaves the replicas to it.
func TestReconciler_ForeignHPA_ReportedAndReplicasLeftAlone(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "foreign-hpa")
	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 2}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)

	keda := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "keda-hpa-api"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
			MinReplicas:    ptr.To[int32](1), MaxReplicas: 10, Metrics: cpu70,
		},
	}
	Expect(c.Create(ctx, keda)).To(Succeed())
	cond := eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonForeignHPA)
	Expect(cond.Message).To(ContainSubstring("HorizontalPodAutoscaler " + ns + "/keda-hpa-api"))
	Expect(cond.Message).To(ContainSubstring("spec.autoscaling"))
	Expect(cond.Message).To(ContainSubstring("delete the HorizontalPodAutoscaler"))
	Eventually(func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var notes []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Workload" && e.Regarding.Name == "api" && e.Reason == polykubev1alpha1.ReasonForeignHPA {
				notes = append(notes, e.Note)
			}
		}
		return notes
	}).WithTimeout(timeout).WithPolling(poll).Should(ContainElement(ContainSubstring("keda-hpa-api")))

	// The HPA scales the Deployment; a reconcile (here one run right now, beside the operator)
	// leaves its replicas as they are.
	scaleByHand(t, c, ns, "api", 5)
	reconcileNow(t, c, ns, "api")
	Expect(*getDeployment(Default, c, ns, "api").Spec.Replicas).To(Equal(int32(5)), "the operator reverted the replicas the HPA set")

	// The HPA goes: the allocation's replicas are the operator's again.
	Expect(c.Delete(ctx, keda)).To(Succeed())
	Eventually(func(g Gomega) int32 { return *getDeployment(g, c, ns, "api").Spec.Replicas }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal(int32(2)))
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
}

// kubectl autoscale names its HPA after the Deployment, that is after the Workload: on a
// Workload without spec.autoscaling it is no conflict (Polykube wants no HPA there) but the
// same foreign scaler.
func TestReconciler_ForeignHPA_SameName_Reported(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "foreign-hpa-same")
	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 2}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	Expect(c.Create(ctx, &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
			MaxReplicas:    4,
		},
	})).To(Succeed())
	cond := eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonForeignHPA)
	Expect(cond.Message).To(ContainSubstring("HorizontalPodAutoscaler " + ns + "/api"))
}
