package identity

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// TestRecordVersion_FollowsTheRunningRelease pins a cluster, records a version, then records
// the next release as an in-place upgrade would; the pin itself is left as it was.
func TestRecordVersion_FollowsTheRunningRelease(t *testing.T) {
	g := NewWithT(t)
	s := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(s)).To(Succeed())
	g.Expect(polykubev1alpha1.AddToScheme(s)).To(Succeed())
	c := fake.NewClientBuilder().WithScheme(s).WithObjects(
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kube-system", UID: "uid-1"}},
	).Build()
	ctx := context.Background()

	g.Expect(Pin(ctx, c, "test", DefaultNamespace, "east")).To(Succeed())
	read := func() map[string]string {
		cm := &corev1.ConfigMap{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: DefaultNamespace, Name: ConfigMapName}, cm)).To(Succeed())
		return cm.Data
	}
	g.Expect(RecordVersion(ctx, c, DefaultNamespace, "v0.1.0")).To(Succeed())
	g.Expect(read()).To(Equal(map[string]string{keyClusterName: "east", keyClusterUID: "uid-1", KeyOperatorVersion: "v0.1.0"}))

	g.Expect(RecordVersion(ctx, c, DefaultNamespace, "v0.2.0")).To(Succeed())
	g.Expect(read()).To(HaveKeyWithValue(KeyOperatorVersion, "v0.2.0"))
	g.Expect(Pin(ctx, c, "test", DefaultNamespace, "east")).To(Succeed(), "a recorded version must not break the pin's check")
}

func TestRecordVersion_NoPinIsAnError(t *testing.T) {
	g := NewWithT(t)
	c := fake.NewClientBuilder().Build()
	err := RecordVersion(context.Background(), c, DefaultNamespace, "v0.1.0")
	g.Expect(err).To(MatchError(ContainSubstring("ConfigMap polykube-system/polykube-identity")))
}
