package workload

import (
	"context"
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/polykube/polykube/operator/internal/unmanaged"
)

// TestOwnershipOf_OneCheckForEveryKind runs the one ownership check over each kind the Workload
// reconciler writes: Polykube's own object is ours, another cluster's is named and left alone,
// one Polykube did not make is a conflict only where the Workload wants one of that kind, and an
// absent one is nothing.
func TestOwnershipOf_OneCheckForEveryKind(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	wl := testWorkload()
	meta := func(labels map[string]string, owned bool) metav1.ObjectMeta {
		m := metav1.ObjectMeta{Namespace: wl.Namespace, Name: wl.Name, Labels: labels}
		if owned {
			m.OwnerReferences = []metav1.OwnerReference{ownerRef(wl)}
		}
		return m
	}
	kinds := []struct {
		kind  string
		obj   func(metav1.ObjectMeta) client.Object
		empty func() client.Object
		probe func() client.Object
	}{
		{"Deployment", func(m metav1.ObjectMeta) client.Object { return &appsv1.Deployment{ObjectMeta: m} },
			func() client.Object { return &appsv1.Deployment{} }, func() client.Object { return unmanaged.Deployment() }},
		{"Service", func(m metav1.ObjectMeta) client.Object { return &corev1.Service{ObjectMeta: m} },
			func() client.Object { return &corev1.Service{} }, func() client.Object { return unmanaged.Service() }},
		{"HorizontalPodAutoscaler", func(m metav1.ObjectMeta) client.Object { return &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: m} },
			func() client.Object { return &autoscalingv2.HorizontalPodAutoscaler{} }, func() client.Object { return &autoscalingv2.HorizontalPodAutoscaler{} }},
	}
	cases := []struct {
		name                   string
		present                *metav1.ObjectMeta
		wanted                 bool
		ours                   bool
		conflict, otherCluster string
	}{
		{name: "absent", wanted: true},
		{name: "ours", present: ptrTo(meta(ownedLabels(wl, "east"), true)), wanted: true, ours: true},
		{name: "another cluster's", present: ptrTo(meta(ownedLabels(wl, "west"), true)), wanted: true, otherCluster: `%s shop/api (cluster "west")`},
		{name: "foreign, wanted", present: ptrTo(meta(map[string]string{"app": "api"}, false)), wanted: true, conflict: "%s shop/api"},
		{name: "foreign, not wanted", present: ptrTo(meta(map[string]string{"app": "api"}, false)), wanted: false},
	}
	for _, k := range kinds {
		for _, c := range cases {
			t.Run(k.kind+"/"+c.name, func(t *testing.T) {
				b := fake.NewClientBuilder().WithScheme(scheme)
				if c.present != nil {
					b = b.WithObjects(k.obj(*c.present))
				}
				r := &Reconciler{Client: b.Build(), ClusterName: "east"}
				ours, conflict, other, err := r.ownershipOf(context.Background(), wl, k.empty(), k.probe(), c.wanted)
				if err != nil {
					t.Fatal(err)
				}
				want := func(f string) string {
					if f == "" {
						return ""
					}
					return fmt.Sprintf(f, k.kind)
				}
				if ours != c.ours || conflict != want(c.conflict) || other != want(c.otherCluster) {
					t.Errorf("ownershipOf = (%t, %q, %q); want (%t, %q, %q)", ours, conflict, other, c.ours, want(c.conflict), want(c.otherCluster))
				}
			})
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
