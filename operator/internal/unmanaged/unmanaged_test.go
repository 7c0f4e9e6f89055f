package unmanaged

import (
	"testing"

	. "github.com/onsi/gomega"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func fullMeta() metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: "api", Namespace: "shop", UID: "u1", ResourceVersion: "7", Generation: 3,
		Labels:      map[string]string{"app": "api", polykubev1alpha1.ManagedByLabel: "Helm"},
		Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"a":"whole copy"}`},
		OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "v1", Kind: "ConfigMap", Name: "not-a-controller", UID: "o1"},
			{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "boss", UID: "o2", Controller: ptr.To(true)},
		},
		Finalizers:    []string{"example.com/keep"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}
}

func TestTransform_KeepsOnlyWhatTheChecksRead(t *testing.T) {
	g := NewWithT(t)
	m := Deployment()
	m.ObjectMeta = fullMeta()
	out, err := Transform(m)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out.(*metav1.PartialObjectMetadata).ObjectMeta).To(Equal(metav1.ObjectMeta{
		Name: "api", Namespace: "shop", UID: "u1", ResourceVersion: "7",
		Labels:          map[string]string{polykubev1alpha1.ManagedByLabel: "Helm"},
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "boss", UID: "o2", Controller: ptr.To(true)}},
	}))
	g.Expect(m.Kind).To(Equal("Deployment"), "the kind stays: the cache is keyed by it")

	h := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: fullMeta(), Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
		MinReplicas:    ptr.To[int32](2), MaxReplicas: 9,
	}, Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 4}}
	_, err = Transform(h)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(h.Spec).To(Equal(autoscalingv2.HorizontalPodAutoscalerSpec{
		ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "api"},
	}))
	g.Expect(h.Status).To(BeZero())
	g.Expect(h.Annotations).To(BeNil())

	// A tombstone passes as it is.
	tomb := struct{ Key string }{"shop/api"}
	out, err = Transform(tomb)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(out).To(Equal(tomb))
}

func TestNameTakenOrFreed(t *testing.T) {
	obj := func(managed bool, rv string, labels ...string) *metav1.PartialObjectMetadata {
		m := Deployment()
		m.Name, m.Namespace, m.ResourceVersion = "api", "shop", rv
		m.Labels = map[string]string{}
		if managed {
			m.Labels[polykubev1alpha1.ManagedByLabel] = polykubev1alpha1.ManagedByValue
		}
		for _, l := range labels {
			m.Labels[l] = "x"
		}
		return m
	}
	p := NameTakenOrFreed[*metav1.PartialObjectMetadata]()
	upd := func(before, after *metav1.PartialObjectMetadata) bool {
		return p.Update(event.TypedUpdateEvent[*metav1.PartialObjectMetadata]{ObjectOld: before, ObjectNew: after})
	}
	for _, tc := range []struct {
		name string
		got  bool
		want bool
	}{
		{"a foreign object appears", p.Create(event.TypedCreateEvent[*metav1.PartialObjectMetadata]{Object: obj(false, "1")}), true},
		{"the initial list", p.Create(event.TypedCreateEvent[*metav1.PartialObjectMetadata]{Object: obj(false, "1"), IsInInitialList: true}), false},
		{"Polykube's own appears (the manager's cache sees it)", p.Create(event.TypedCreateEvent[*metav1.PartialObjectMetadata]{Object: obj(true, "1")}), false},
		{"a foreign object goes", p.Delete(event.TypedDeleteEvent[*metav1.PartialObjectMetadata]{Object: obj(false, "1")}), true},
		{"Polykube's own goes", p.Delete(event.TypedDeleteEvent[*metav1.PartialObjectMetadata]{Object: obj(true, "1")}), false},
		{"status churn: only the resourceVersion moved", upd(obj(false, "1"), obj(false, "2")), false},
		{"labelled as Polykube's by hand", upd(obj(false, "1"), obj(true, "2")), true},
		{"Polykube's label removed by hand", upd(obj(true, "1"), obj(false, "2")), true},
		{"Polykube's own changes", upd(obj(true, "1"), obj(true, "2", "more")), false},
		{"generic", p.Generic(event.TypedGenericEvent[*metav1.PartialObjectMetadata]{Object: obj(false, "1")}), false},
	} {
		if tc.got != tc.want {
			t.Errorf("%s: passed=%v, want %v", tc.name, tc.got, tc.want)
		}
	}

	hpa := func(target string) *autoscalingv2.HorizontalPodAutoscaler {
		return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Name: "keda-hpa-api", Namespace: "shop", ResourceVersion: target},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: target}}}
	}
	ph := NameTakenOrFreed[*autoscalingv2.HorizontalPodAutoscaler]()
	if !ph.Update(event.TypedUpdateEvent[*autoscalingv2.HorizontalPodAutoscaler]{ObjectOld: hpa("api"), ObjectNew: hpa("web")}) {
		t.Error("a foreign HPA pointed at another Deployment must pass")
	}
	same := hpa("api")
	same.ResourceVersion = "later"
	if ph.Update(event.TypedUpdateEvent[*autoscalingv2.HorizontalPodAutoscaler]{ObjectOld: hpa("api"), ObjectNew: same}) {
		t.Error("a foreign HPA's status write must not pass")
	}
}
