package ownmember

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func TestGet(t *testing.T) {
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())
	terminating := &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{
		Name: "alpha", Finalizers: []string{"argocd.argoproj.io/foreground"},
		DeletionTimestamp: ptr.To(metav1.NewTime(time.Date(2026, 12, 7, 1, 2, 3, 0, time.UTC))),
	}}
	tests := []struct {
		name       string
		objs       []client.Object
		wantMember bool
		wantReason string
		wantMsg    []string
	}{
		{name: "present", objs: []client.Object{&polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: "alpha"}}}, wantMember: true},
		{name: "absent", wantReason: polykubev1alpha1.ReasonClusterUnknown, wantMsg: []string{`no ClusterMember named "alpha"`}},
		{name: "terminating", objs: []client.Object{terminating}, wantReason: polykubev1alpha1.ReasonClusterMemberTerminating,
			wantMsg: []string{`ClusterMember "alpha" (this cluster) is being deleted`, "2026-12-07T01:02:03Z", "argocd.argoproj.io/foreground",
				"nothing is created, changed or deleted", "restore it there"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(tt.objs...).Build()
			m, reason, msg, err := Get(context.Background(), c, "alpha")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(m != nil).To(Equal(tt.wantMember))
			g.Expect(reason).To(Equal(tt.wantReason))
			for _, w := range tt.wantMsg {
				g.Expect(msg).To(ContainSubstring(w))
			}
		})
	}
}
