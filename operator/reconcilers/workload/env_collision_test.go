package workload_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

// TestDatastoreBinding_EnvCollision_FirstEstablishedKeepsTheVariable: a second binding mapping
// the same variable, added by mistake, does not change the running Deployment, whatever the
// names' sort order: the binding established first keeps DATABASE_URL; the other one says so
// (Bound=False/EnvConflict, naming both) and so does the Workload (EnvVarsUnique=False).
func TestDatastoreBinding_EnvCollision_FirstEstablishedKeepsTheVariable(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "envcollision")
	startOperator(t, east)

	for _, s := range []string{"primary-creds", "replica-creds"} {
		Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: s},
			StringData: map[string]string{"url": "postgres://" + s}})).To(Succeed())
	}
	Expect(c.Create(ctx, workload(ns, "orders", map[string]int32{east: 1}))).To(Succeed())
	binding := func(name, secret string) *polykubev1alpha1.DatastoreBinding {
		return &polykubev1alpha1.DatastoreBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: polykubev1alpha1.DatastoreBindingSpec{
				WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "orders"},
				SecretRef:   polykubev1alpha1.LocalSecretReference{Name: secret},
				Env:         []polykubev1alpha1.EnvFromSecretKey{{Name: "DATABASE_URL", Key: "url"}},
			},
		}
	}
	bound := func(g Gomega, name string) *metav1.Condition {
		b := &polykubev1alpha1.DatastoreBinding{}
		g.Expect(c.Get(ctx, key(ns, name), b)).To(Succeed())
		cond := meta.FindStatusCondition(b.Status.Conditions, polykubev1alpha1.BoundCondition)
		g.Expect(cond).NotTo(BeNil())
		return cond
	}
	envSecret := func(g Gomega) string {
		d := getDeployment(g, c, ns, "orders")
		for _, e := range d.Spec.Template.Spec.Containers[0].Env {
			if e.Name == "DATABASE_URL" {
				return e.ValueFrom.SecretKeyRef.Name
			}
		}
		return ""
	}

	// The first binding sorts first by name; the mistaken second one sorts last.
	first := binding("a-primary", "primary-creds")
	Expect(c.Create(ctx, first)).To(Succeed())
	Eventually(func(g Gomega) { g.Expect(bound(g, "a-primary").Status).To(Equal(metav1.ConditionTrue)) }).
		WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Expect(envSecret(NewWithT(t))).To(Equal("primary-creds"))
	// creationTimestamp has a resolution of one second: make the second binding visibly later.
	time.Sleep(time.Until(first.CreationTimestamp.Add(1100 * time.Millisecond)))
	Expect(c.Create(ctx, binding("z-replica", "replica-creds"))).To(Succeed())

	Eventually(func(g Gomega) {
		cond := bound(g, "z-replica")
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonEnvConflict))
		g.Expect(cond.Message).To(And(ContainSubstring("DATABASE_URL"), ContainSubstring("a-primary")))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the later binding reports the collision")
	Eventually(func(g Gomega) {
		wl := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(ctx, key(ns, "orders"), wl)).To(Succeed())
		cond := meta.FindStatusCondition(wl.Status.Conditions, polykubev1alpha1.EnvVarsUniqueCondition)
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonEnvConflict))
		g.Expect(cond.Message).To(And(ContainSubstring("DATABASE_URL"), ContainSubstring("a-primary"), ContainSubstring("z-replica")))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the Workload reports the collision")
	Consistently(func(g Gomega) string { return envSecret(g) }).
		WithTimeout(2*time.Second).WithPolling(200*time.Millisecond).Should(Equal("primary-creds"), "the running Deployment keeps the first binding's variable")
	Expect(bound(NewWithT(t), "a-primary").Status).To(Equal(metav1.ConditionTrue))

	// Both the losing binding and the Workload record a Warning event with the reason.
	warned := func(kind, name string) func(g Gomega) {
		return func(g Gomega) {
			list := &eventsv1.EventList{}
			g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
			found := false
			for _, e := range list.Items {
				if e.Regarding.Kind == kind && e.Regarding.Name == name && e.Reason == polykubev1alpha1.ReasonEnvConflict && e.Type == corev1.EventTypeWarning {
					found = true
				}
			}
			g.Expect(found).To(BeTrue(), "no Warning %s event on %s %s", polykubev1alpha1.ReasonEnvConflict, kind, name)
		}
	}
	Eventually(warned("DatastoreBinding", "z-replica")).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Eventually(warned("Workload", "orders")).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}
