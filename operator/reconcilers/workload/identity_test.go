package workload_test

import (
	"context"
	"errors"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/identity"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/operator/internal/setup"
)

// pinNamespace gives the identity ConfigMap a namespace of its own in the shared API server and
// removes the pin at the end, so that other tests' operators are unaffected.
func pinNamespace(t *testing.T, c client.Client) string {
	t.Helper()
	ns := optest.Namespace(t, c, "identity")
	t.Cleanup(func() {
		_ = c.Delete(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: identity.ConfigMapName}})
	})
	return ns
}

// The operator binary runs setup.PinIdentity before any controller and exits when it fails
// (operator/main.go); this test does the same. Reproduces issue 12 defect 1: an operator of
// cluster east restarted as west used to delete east's Deployment (west is not a target).
func TestOperator_StartedAsAnotherMember_ChangesNothing(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	cfg, _ := env.Start(t)
	pinNS := pinNamespace(t, c)
	ns := optest.Namespace(t, c, "wrongname")

	Expect(setup.PinIdentity(ctx, cfg, setup.Options{ClusterName: east, IdentityNamespace: pinNS})).To(Succeed())
	op := startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 2}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	before := getDeployment(NewWithT(t), c, ns, "api")
	op.Stop(t)

	// Restarted with another member's name (a copied Flux entry point).
	err := setup.PinIdentity(ctx, cfg, setup.Options{ClusterName: "west", IdentityNamespace: pinNS})
	Expect(errors.Is(err, identity.ErrMismatch)).To(BeTrue(), "PinIdentity as west: %v", err)
	Expect(err.Error()).NotTo(ContainSubstring("could not be"), "the condition and the event are written")
	Expect(err.Error()).To(And(ContainSubstring(`pinned to ClusterMember "east"`), ContainSubstring(`--cluster-name "west"`),
		ContainSubstring("Fix --cluster-name")))
	if err == nil { // what the operator did before the pin: run anyway
		startOperator(t, "west")
	}
	Consistently(func(g Gomega) {
		d := getDeployment(g, c, ns, "api")
		g.Expect(d.UID).To(Equal(before.UID))
		g.Expect(d.DeletionTimestamp).To(BeNil())
	}).WithTimeout(3*time.Second).WithPolling(poll).Should(Succeed(), "the Deployment of east is left alone")

	// The refusal is said in a condition on the pinned member and in an event.
	member := &polykubev1alpha1.ClusterMember{}
	Expect(c.Get(ctx, client.ObjectKey{Name: east}, member)).To(Succeed())
	cond := meta.FindStatusCondition(member.Status.Conditions, polykubev1alpha1.OperatorIdentityCondition)
	Expect(cond).NotTo(BeNil())
	Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonIdentityMismatch))
	evs := &eventsv1.EventList{}
	Expect(c.List(ctx, evs, client.InNamespace(pinNS))).To(Succeed())
	Expect(evs.Items).To(ContainElement(HaveField("Reason", polykubev1alpha1.ReasonIdentityMismatch)))

	// Started as east again, it runs and says so.
	Expect(setup.PinIdentity(ctx, cfg, setup.Options{ClusterName: east, IdentityNamespace: pinNS})).To(Succeed())
	Expect(c.Get(ctx, client.ObjectKey{Name: east}, member)).To(Succeed())
	Expect(meta.IsStatusConditionTrue(member.Status.Conditions, polykubev1alpha1.OperatorIdentityCondition)).To(BeTrue())
}

// A pin copied from another cluster (a restored backup) is refused too.
func TestPinIdentity_CopiedFromAnotherCluster_Refused(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	cfg, _ := env.Start(t)
	pinNS := pinNamespace(t, c)
	Expect(c.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: pinNS, Name: identity.ConfigMapName},
		Data: map[string]string{"clusterName": east, "kubeSystemUID": "00000000-0000-0000-0000-000000000000"}})).To(Succeed())
	err := setup.PinIdentity(ctx, cfg, setup.Options{ClusterName: east, IdentityNamespace: pinNS})
	Expect(errors.Is(err, identity.ErrMismatch)).To(BeTrue(), "err = %v", err)
	Expect(err.Error()).To(ContainSubstring("copied from another cluster"))
}

// Defect 1, second half: whatever its --cluster-name, an operator never deletes, scales or
// relabels an object Polykube labelled for another cluster (here: the pin was removed by hand
// and the operator started as west, which the Workload does not target).
func TestReconciler_ObjectsLabelledForAnotherCluster_LeftAlone(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "othercluster")
	op := startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 2}, httpPort))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	before := getDeployment(NewWithT(t), c, ns, "api")
	op.Stop(t)

	startOperator(t, "west")
	cond := eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonIdentityMismatch)
	Expect(cond.Message).To(And(ContainSubstring(`Deployment `+ns+`/api (cluster "east")`), ContainSubstring(`runs as "west"`)))
	Consistently(func(g Gomega) {
		d := getDeployment(g, c, ns, "api")
		g.Expect(d.ResourceVersion).To(Equal(before.ResourceVersion), "the Deployment was changed")
		svc := &corev1.Service{}
		g.Expect(c.Get(ctx, key(ns, "api"), svc)).To(Succeed())
	}).WithTimeout(3 * time.Second).WithPolling(poll).Should(Succeed())
}

// Defect 7: a cluster a Workload does not target reports NotTargeted, not a Conflict, when an
// unrelated object of the same name exists there.
func TestReconciler_NotTargeted_NoFalseConflict(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "nofalseconflict")
	other := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "web:1"}}}},
		},
	}
	Expect(c.Create(ctx, other)).To(Succeed())
	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "web", map[string]int32{"west": 2}))).To(Succeed())
	eventuallyReady(t, c, ns, "web", metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted)
	Expect(c.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed())
	Expect(other.DeletionTimestamp).To(BeNil())
}

// Defect 3: a Workload deleted without its objects (--cascade=orphan, or deleted and applied
// again before the garbage collector ran) and applied again takes its Deployment and Service
// back: same objects, pod template untouched, no Conflict.
func TestReconciler_WorkloadAppliedAgain_TakesOverItsObjects(t *testing.T) {
	for _, tc := range []struct {
		name string
		// orphaned is what the garbage collector does on --cascade=orphan: it removes the
		// owner reference. Without it, the reference to the old UID remains, as it does until
		// the collector runs (envtest has none).
		orphaned bool
	}{{"owner reference removed (cascade=orphan)", true}, {"owner reference to the deleted Workload", false}} {
		t.Run(tc.name, func(t *testing.T) {
			c := start(t)
			ctx := context.Background()
			ns := optest.Namespace(t, c, "again")
			startOperator(t, east)
			wl := workload(ns, "api", map[string]int32{east: 2}, httpPort)
			Expect(c.Create(ctx, wl.DeepCopy())).To(Succeed())
			eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
			dep := getDeployment(NewWithT(t), c, ns, "api")
			old := &polykubev1alpha1.Workload{}
			Expect(c.Get(ctx, key(ns, "api"), old)).To(Succeed())

			// envtest has no garbage collector: an orphaning delete would wait forever for it
			// to remove its finalizer. A plain delete removes the Workload at once; the
			// collector's part (removing the owner references, for --cascade=orphan) is done
			// by hand below. The scenario "A Workload deleted and applied again keeps its
			// pods" runs the real thing on a cluster with a collector.
			Expect(c.Delete(ctx, old)).To(Succeed())
			Eventually(isNotFound(c, old)).WithTimeout(timeout).Should(BeTrue())
			if tc.orphaned {
				for _, obj := range []client.Object{&appsv1.Deployment{}, &corev1.Service{}} {
					Expect(c.Get(ctx, key(ns, "api"), obj)).To(Succeed())
					patch := client.MergeFrom(obj.DeepCopyObject().(client.Object))
					obj.SetOwnerReferences(nil)
					Expect(c.Patch(ctx, obj, patch)).To(Succeed())
				}
			}
			Expect(c.Create(ctx, wl.DeepCopy())).To(Succeed())
			eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)

			now := &polykubev1alpha1.Workload{}
			Expect(c.Get(ctx, key(ns, "api"), now)).To(Succeed())
			d := getDeployment(NewWithT(t), c, ns, "api")
			Expect(d.UID).To(Equal(dep.UID), "the same Deployment")
			Expect(d.Generation).To(Equal(dep.Generation), "its spec (and so its pods) untouched")
			Expect(metav1.GetControllerOf(d)).To(HaveField("UID", now.UID))
			svc := &corev1.Service{}
			Expect(c.Get(ctx, key(ns, "api"), svc)).To(Succeed())
			Expect(metav1.GetControllerOf(svc)).To(HaveField("UID", now.UID))
		})
	}
}

// A Deployment Polykube made in this cluster for another Workload name is never taken over.
func TestReconciler_TakeOver_OnlyWhatWasMadeForThisName(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "notours")
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", Labels: map[string]string{
			polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.ClusterLabel: east,
			polykubev1alpha1.WorkloadNameLabel: "other"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "api"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "api"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "api", Image: "api:1"}}}},
		},
	}
	Expect(c.Create(ctx, d)).To(Succeed())
	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 2}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)
	Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
	Expect(d.OwnerReferences).To(BeEmpty())
}
