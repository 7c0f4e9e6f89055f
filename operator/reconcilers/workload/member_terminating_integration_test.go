package workload_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

// holdFinalizer keeps a deleted ClusterMember terminating, as Argo CD's foreground prune or
// `kubectl delete --cascade=foreground` does.
const holdFinalizer = "test.polykube.kismet.io/hold"

// labelledMember creates a ClusterMember with spec.labels and deletes it (dropping any finalizer
// the test left) when the test ends.
func labelledMember(t *testing.T, c client.Client, name string, clusterID int32, labels map[string]string) {
	t.Helper()
	m := optest.ClusterMember(name, clusterID)
	m.Spec.Labels = labels
	Expect(c.Create(context.Background(), m)).To(Succeed())
	t.Cleanup(func() {
		ctx := context.Background()
		m := &polykubev1alpha1.ClusterMember{}
		if err := c.Get(ctx, types.NamespacedName{Name: name}, m); err != nil {
			if !apierrors.IsNotFound(err) {
				t.Errorf("get ClusterMember %s: %v", name, err)
			}
			return
		}
		if len(m.Finalizers) > 0 {
			patched := m.DeepCopy()
			patched.Finalizers = nil
			if err := c.Patch(ctx, patched, client.MergeFrom(m)); err != nil {
				t.Errorf("drop the finalizers of ClusterMember %s: %v", name, err)
			}
		}
		if err := c.Delete(ctx, m); err != nil && !apierrors.IsNotFound(err) {
			t.Errorf("delete ClusterMember %s: %v", name, err)
		}
	})
}

// The repro of issue 33, defect 1: this cluster's own ClusterMember, selected by a label, is
// deleted while a finalizer holds it. placement leaves a terminating member out of the targets;
// the Workload must not read that as "no longer targeted here" and delete its Deployment.
func TestReconciler_OwnMemberTerminating_ChangesNothing(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "member-terminating")
	eu := map[string]string{"region": "eu"}
	labelledMember(t, c, "alpha", 21, eu)
	labelledMember(t, c, "beta", 22, eu)
	startOperator(t, "alpha")

	wl := workload(ns, "cart", nil, httpPort)
	wl.Spec.Distribution.TargetSelectors = []polykubev1alpha1.TargetSelector{{
		LabelSelector: metav1.LabelSelector{MatchLabels: eu},
		Replicas:      ptr.To[int32](2),
	}}
	Expect(c.Create(ctx, wl)).To(Succeed())
	eventuallyReady(t, c, ns, "cart", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	dep := getDeployment(Default, c, ns, "cart")
	Expect(*dep.Spec.Replicas).To(Equal(int32(2)))

	// The roster drops alpha while a finalizer holds it: it is terminating.
	alpha := &polykubev1alpha1.ClusterMember{}
	Expect(c.Get(ctx, types.NamespacedName{Name: "alpha"}, alpha)).To(Succeed())
	held := alpha.DeepCopy()
	held.Finalizers = append(held.Finalizers, holdFinalizer)
	Expect(c.Patch(ctx, held, client.MergeFrom(alpha))).To(Succeed())
	Expect(c.Delete(ctx, held)).To(Succeed())

	cond := eventuallyReady(t, c, ns, "cart", metav1.ConditionFalse, polykubev1alpha1.ReasonClusterMemberTerminating)
	Expect(cond.Message).To(ContainSubstring(`ClusterMember "alpha"`))
	Expect(cond.Message).To(ContainSubstring("nothing is created, changed or deleted"))
	// The reconcile that reported it is the one that would have deleted: the objects are there,
	// the very same ones, unchanged.
	after := getDeployment(Default, c, ns, "cart")
	Expect(after.UID).To(Equal(dep.UID), "Deployment cart was deleted and made again")
	Expect(*after.Spec.Replicas).To(Equal(int32(2)))
	Expect(c.Get(ctx, key(ns, "cart"), &corev1.Service{})).To(Succeed(), "Service cart was deleted")

	// The finalizer goes, and with it the member: absent, the Workload still changes nothing.
	Expect(c.Get(ctx, types.NamespacedName{Name: "alpha"}, alpha)).To(Succeed())
	released := alpha.DeepCopy()
	released.Finalizers = nil
	Expect(c.Patch(ctx, released, client.MergeFrom(alpha))).To(Succeed())
	eventuallyReady(t, c, ns, "cart", metav1.ConditionFalse, polykubev1alpha1.ReasonClusterUnknown)
	Expect(getDeployment(Default, c, ns, "cart").UID).To(Equal(dep.UID), "Deployment cart was deleted once the member was gone")
}
