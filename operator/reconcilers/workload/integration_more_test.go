package workload_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

func TestReconciler_MissingClusterMember_ClusterUnknownUntilItAppears(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "unknown")
	startOperator(t, "nowhere")
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{"nowhere": 2, east: 1}))).To(Succeed())

	cond := eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonClusterUnknown)
	Expect(cond.Message).To(ContainSubstring(`no ClusterMember named "nowhere"`))
	Expect(isNotFound(c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}})()).To(BeTrue())
	wl := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, key(ns, "api"), wl)).To(Succeed())
	Expect(meta.IsStatusConditionTrue(wl.Status.Conditions, polykubev1alpha1.AllocatedCondition)).To(BeTrue())

	// Git delivers the ClusterMember: the operator picks its Workloads up without a restart.
	member := optest.ClusterMember("nowhere", 42)
	Expect(c.Create(ctx, member)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), member) })
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	Expect(*getDeployment(NewWithT(t), c, ns, "api").Spec.Replicas).To(Equal(int32(2)))
}

// secretValue is long enough that a hex dump of any response carrying it (client-go logs bodies
// at verbosity 8, and the tests log at every verbosity) shows 16 consecutive characters of it.
const secretValue = "pa55-Zq9-UNIQUE-SECRET-VALUE-0123456789-abcdefghijklmnop-XYZ"

func dbBinding(ns, secret string) *polykubev1alpha1.DatastoreBinding {
	return &polykubev1alpha1.DatastoreBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-db"},
		Spec: polykubev1alpha1.DatastoreBindingSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "orders"},
			SecretRef:   polykubev1alpha1.LocalSecretReference{Name: secret},
			Prefix:      "DB_",
			Env:         []polykubev1alpha1.EnvFromSecretKey{{Name: "HOST", Key: "host"}, {Name: "PASSWORD", Key: "password"}},
		},
	}
}

func bindingCondition(g Gomega, c client.Client, ns string) (*metav1.Condition, *polykubev1alpha1.DatastoreBinding) {
	b := &polykubev1alpha1.DatastoreBinding{}
	g.Expect(c.Get(context.Background(), key(ns, "orders-db"), b)).To(Succeed())
	cond := meta.FindStatusCondition(b.Status.Conditions, polykubev1alpha1.BoundCondition)
	g.Expect(cond).NotTo(BeNil())
	g.Expect(cond.ObservedGeneration).To(Equal(b.Generation))
	return cond, b
}

func eventuallyBound(t *testing.T, c client.Client, ns string, status metav1.ConditionStatus, reason string) (*metav1.Condition, *polykubev1alpha1.DatastoreBinding) {
	t.Helper()
	var cond *metav1.Condition
	var b *polykubev1alpha1.DatastoreBinding
	Eventually(func(g Gomega) {
		cond, b = bindingCondition(g, c, ns)
		g.Expect(cond.Status).To(Equal(status))
		g.Expect(cond.Reason).To(Equal(reason))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "DatastoreBinding %s/orders-db Bound=%s/%s", ns, status, reason)
	return cond, b
}

func TestDatastoreBinding_MissingSecret_ConditionAndDeploymentUnchanged(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "nosecret")
	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "orders", map[string]int32{east: 2}))).To(Succeed())
	eventuallyReady(t, c, ns, "orders", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	before := getDeployment(NewWithT(t), c, ns, "orders")

	Expect(c.Create(ctx, dbBinding(ns, "orders-db-creds"))).To(Succeed())
	cond, _ := eventuallyBound(t, c, ns, metav1.ConditionFalse, polykubev1alpha1.ReasonSecretNotFound)
	Expect(cond.Message).To(ContainSubstring("Secret " + ns + "/orders-db-creds not found"))
	Expect(cond.Message).To(ContainSubstring("host, password"))

	// The Workload reconciler re-checks the Secret every 300ms here; over several rounds the
	// Deployment must not change.
	Consistently(func(g Gomega) string { return getDeployment(g, c, ns, "orders").ResourceVersion }).
		WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Equal(before.ResourceVersion))

	// A Secret without the password key: the message names the missing key.
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-db-creds"}, StringData: map[string]string{"host": "db.internal"}}
	Expect(c.Create(ctx, secret)).To(Succeed())
	cond, _ = eventuallyBound(t, c, ns, metav1.ConditionFalse, polykubev1alpha1.ReasonSecretKeyMissing)
	Expect(cond.Message).To(ContainSubstring("lacks the keys password"))
	Consistently(func(g Gomega) string { return getDeployment(g, c, ns, "orders").ResourceVersion }).
		WithTimeout(time.Second).WithPolling(200 * time.Millisecond).Should(Equal(before.ResourceVersion))
}

func TestDatastoreBinding_WithSecret_SecretKeyRefAndValueNeverCopied(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "secret")
	op := startOperator(t, east)

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-db-creds"},
		StringData: map[string]string{"host": "db.internal", "password": secretValue}}
	Expect(c.Create(ctx, secret)).To(Succeed())
	wl := workload(ns, "orders", map[string]int32{east: 2})
	wl.Spec.Template.Spec.Containers = append(wl.Spec.Template.Spec.Containers, corev1.Container{Name: "sidecar", Image: "sidecar:1"})
	Expect(c.Create(ctx, wl)).To(Succeed())
	Expect(c.Create(ctx, dbBinding(ns, "orders-db-creds"))).To(Succeed())

	_, b := eventuallyBound(t, c, ns, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
	Expect(b.Status.BoundEnv).To(Equal([]string{"DB_HOST", "DB_PASSWORD"}))
	Expect(meta.IsStatusConditionTrue(b.Status.Conditions, polykubev1alpha1.ReadyCondition)).To(BeTrue())

	d := getDeployment(NewWithT(t), c, ns, "orders")
	for _, ctr := range d.Spec.Template.Spec.Containers {
		Expect(ctr.Env).To(ConsistOf(
			corev1.EnvVar{Name: "DB_HOST", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "orders-db-creds"}, Key: "host"}}},
			corev1.EnvVar{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: "orders-db-creds"}, Key: "password"}}},
		), "container %s", ctr.Name)
	}

	// Remove the password key: the binding reports it, the Deployment keeps running unchanged.
	Expect(c.Get(ctx, key(ns, "orders-db-creds"), secret)).To(Succeed())
	delete(secret.Data, "password")
	Expect(c.Update(ctx, secret)).To(Succeed())
	cond, _ := eventuallyBound(t, c, ns, metav1.ConditionFalse, polykubev1alpha1.ReasonSecretKeyMissing)
	Expect(cond.Message).To(ContainSubstring("password"))
	Consistently(func(g Gomega) string { return getDeployment(g, c, ns, "orders").ResourceVersion }).
		WithTimeout(time.Second).WithPolling(200 * time.Millisecond).Should(Equal(d.ResourceVersion))

	// The value appears nowhere: not in the Deployment, Workload, binding, events or the log.
	assertNoSecretValue(t, c, ns, op)
}

func assertNoSecretValue(t *testing.T, c client.Client, ns string, op *optest.Operator) {
	t.Helper()
	ctx := context.Background()
	for _, list := range []client.ObjectList{
		&appsv1.DeploymentList{}, &corev1.ServiceList{}, &polykubev1alpha1.WorkloadList{},
		&polykubev1alpha1.DatastoreBindingList{}, &eventsv1.EventList{}, &corev1.EventList{}, &corev1.ConfigMapList{},
	} {
		Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		raw, err := json.Marshal(list)
		Expect(err).NotTo(HaveOccurred())
		Expect(string(raw)).NotTo(ContainSubstring(secretValue), "%T holds the secret value", list)
	}
	log := op.Log()
	Expect(log).To(ContainSubstring("Response Body"), "the log is captured at the verbosity where client-go logs bodies")
	Expect(log).NotTo(ContainSubstring(base64.StdEncoding.EncodeToString([]byte(secretValue))), "the operator logged the secret value, base64-encoded")
	for i := 0; i+16 <= len(secretValue); i++ {
		Expect(log).NotTo(ContainSubstring(secretValue[i:i+16]), "the operator logged (part of) the secret value")
	}
}

func TestReconciler_RestartMidWork_NoDuplicatesNothingDeleted(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "restart")
	first := startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 2, "west": 1}, httpPort))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	dep := getDeployment(NewWithT(t), c, ns, "api")
	svc := &corev1.Service{}
	Expect(c.Get(ctx, key(ns, "api"), svc)).To(Succeed())
	first.Stop(t)

	// While the operator is down, Git changes the replicas and the image.
	wl := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, key(ns, "api"), wl)).To(Succeed())
	setTargets(wl, map[string]int32{east: 4, "west": 1})
	wl.Spec.Template.Spec.Containers[0].Image = "registry.example.com/api:v2"
	Expect(c.Update(ctx, wl)).To(Succeed())

	second := startOperator(t, east)
	Eventually(func(g Gomega) {
		d := getDeployment(g, c, ns, "api")
		g.Expect(*d.Spec.Replicas).To(Equal(int32(4)))
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/api:v2"))
		g.Expect(d.UID).To(Equal(dep.UID), "the Deployment was recreated")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)

	deps := &appsv1.DeploymentList{}
	Expect(c.List(ctx, deps, client.InNamespace(ns))).To(Succeed())
	Expect(deps.Items).To(HaveLen(1))
	svcs := &corev1.ServiceList{}
	Expect(c.List(ctx, svcs, client.InNamespace(ns))).To(Succeed())
	Expect(svcs.Items).To(HaveLen(1))
	Expect(svcs.Items[0].UID).To(Equal(svc.UID), "the Service was recreated")
	Expect(second.Writes.WriteSummary()).NotTo(ContainElement(ContainSubstring("DELETE")))
	Expect(first.Writes.WriteSummary()).NotTo(ContainElement(ContainSubstring("DELETE")))
}

func TestReconciler_SteadyState_NoAPIWrites(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "steady")
	op := startOperator(t, east)

	Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orders-db-creds"},
		StringData: map[string]string{"host": "h", "password": secretValue}})).To(Succeed())
	Expect(c.Create(ctx, workload(ns, "orders", map[string]int32{east: 2}, httpPort))).To(Succeed())
	Expect(c.Create(ctx, dbBinding(ns, "orders-db-creds"))).To(Succeed())
	unbound := dbBinding(ns, "missing-creds")
	unbound.Name, unbound.Spec.WorkloadRef.Name = "billing-db", "billing"
	Expect(c.Create(ctx, unbound)).To(Succeed())
	Expect(c.Create(ctx, workload(ns, "billing", map[string]int32{east: 1, "west": 1}))).To(Succeed())
	Expect(c.Create(ctx, workload(ns, "elsewhere", map[string]int32{"west": 1}))).To(Succeed())
	Expect(c.Create(ctx, workload(ns, "ready", map[string]int32{east: 1}))).To(Succeed())

	eventuallyBound(t, c, ns, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
	eventuallyReady(t, c, ns, "billing", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	eventuallyReady(t, c, ns, "elsewhere", metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted)
	eventuallyReady(t, c, ns, "ready", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	setDeploymentStatus(t, c, ns, "ready", 1)
	eventuallyReady(t, c, ns, "ready", metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
	Eventually(func(g Gomega) {
		b := &polykubev1alpha1.DatastoreBinding{}
		g.Expect(c.Get(ctx, key(ns, "billing-db"), b)).To(Succeed())
		g.Expect(meta.FindStatusCondition(b.Status.Conditions, polykubev1alpha1.BoundCondition)).To(
			HaveField("Reason", polykubev1alpha1.ReasonSecretNotFound))
	}).WithTimeout(timeout).Should(Succeed())

	// Converged. From here on, with secret re-checks every 300ms, nothing may be written.
	// Let in-flight events flush first: wait until a full second passes without a write.
	last := -1
	Eventually(func() bool {
		n, prev := op.Writes.Writes(), last
		last = n
		return n == prev
	}).WithTimeout(timeout).WithPolling(time.Second).Should(BeTrue(), "writes did not stop: %v", op.Writes.WriteSummary())
	op.Writes.Reset()
	Consistently(func() []string { return op.Writes.WriteSummary() }).
		WithTimeout(4*time.Second).WithPolling(200*time.Millisecond).Should(BeEmpty(), "API writes in the steady state")
	Expect(op.Writes.Reads()).To(BeNumerically(">", 0), "the counter sees the operator's requests")
	Expect(strings.Count(op.Log(), "Creating Deployment")).To(Equal(3))
}
