package workload

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func hpaFor(name, apiVersion, kind, target string) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: apiVersion, Kind: kind, Name: target},
		},
	}
}

func TestScalesDeployment(t *testing.T) {
	tests := []struct {
		name string
		hpa  *autoscalingv2.HorizontalPodAutoscaler
		want bool
	}{
		{"KEDA's HPA of the Deployment", hpaFor("keda-hpa-api", "apps/v1", "Deployment", "api"), true},
		{"an older apps version", hpaFor("api", "apps/v1beta2", "Deployment", "api"), true},
		{"another Deployment", hpaFor("web", "apps/v1", "Deployment", "web"), false},
		{"a StatefulSet of the name", hpaFor("api", "apps/v1", "StatefulSet", "api"), false},
		{"a custom resource of the name", hpaFor("api", "example.com/v1", "Deployment", "api"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(scalesDeployment(tt.hpa, "api")).To(Equal(tt.want))
		})
	}
}

func TestForHPA(t *testing.T) {
	g := NewWithT(t)
	g.Expect(forHPA(context.Background(), hpaFor("keda-hpa-api", "apps/v1", "Deployment", "api"))).To(ConsistOf(
		reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "keda-hpa-api"}},
		reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "api"}}))
	g.Expect(forHPA(context.Background(), hpaFor("api", "apps/v1", "Deployment", "api"))).To(ConsistOf(
		reconcile.Request{NamespacedName: client.ObjectKey{Namespace: "shop", Name: "api"}}))
}

func TestForeignHPAMessage(t *testing.T) {
	g := NewWithT(t)
	wl := &polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"}}
	msg := foreignHPAMessage(wl, []string{"shop/keda-hpa-api"}, 5, 2, false)
	g.Expect(msg).To(ContainSubstring("HorizontalPodAutoscaler shop/keda-hpa-api scales Deployment shop/api"))
	g.Expect(msg).To(ContainSubstring("now 5; the allocation here is 2"))
	g.Expect(msg).To(ContainSubstring("add spec.autoscaling"))
	g.Expect(msg).To(ContainSubstring("delete the HorizontalPodAutoscaler"))
	msg = foreignHPAMessage(wl, []string{"shop/a", "shop/b"}, 5, 2, true)
	g.Expect(msg).To(ContainSubstring("HorizontalPodAutoscalers shop/a, shop/b scale"))
	g.Expect(msg).To(ContainSubstring("delete the HorizontalPodAutoscaler Polykube did not make"))
}
