package workload_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

// forbidSecret returns a copy of cfg whose reads of the Secret ns/name are answered as the API
// server answers a ServiceAccount without RBAC for them: 403 Forbidden. Every other request
// reaches the API server.
func forbidSecret(cfg *rest.Config, ns, name string) *rest.Config {
	out := rest.CopyConfig(cfg)
	path := fmt.Sprintf("/api/v1/namespaces/%s/secrets/%s", ns, name)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			if req.Method != http.MethodGet || req.URL.Path != path {
				return rt.RoundTrip(req)
			}
			body := fmt.Sprintf(`{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure",`+
				`"message":"secrets \"%s\" is forbidden: User \"system:serviceaccount:polykube-system:polykube-operator\" cannot get resource \"secrets\" in API group \"\" in the namespace \"%s\"",`+
				`"reason":"Forbidden","details":{"name":"%s","kind":"secrets"},"code":403}`, name, ns, name)
			return &http.Response{
				StatusCode: http.StatusForbidden, Status: "403 Forbidden", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
				Header:  http.Header{"Content-Type": []string{"application/json"}},
				Body:    io.NopCloser(strings.NewReader(body)),
				Request: req,
			}, nil
		})
	})
	return out
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

// Issue 33, defect 3: one DatastoreBinding whose Secret cannot be read stopped its Workload's
// whole reconcile. The failure is that binding's: it is reported on it and on the Workload, and
// the Workload still scales.
func TestReconciler_BindingSecretUnreadable_ScalingGoesOn(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "unreadable")
	cfg, _ := env.Start(t)
	optest.StartOperator(t, forbidSecret(cfg, ns, "ledger-db"), east, optest.Options{})

	Expect(c.Create(ctx, workload(ns, "orders", map[string]int32{east: 1}))).To(Succeed())
	eventuallyReady(t, c, ns, "orders", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ledger-db"},
		StringData: map[string]string{"host": "db.internal", "password": "x"}}
	Expect(c.Create(ctx, secret)).To(Succeed())
	Expect(c.Create(ctx, dbBinding(ns, "ledger-db"))).To(Succeed())
	// The operator has seen the binding once it reported on it.
	Eventually(func(g Gomega) {
		cond, _ := bindingCondition(g, c, ns)
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// The Workload scales from 1 to 3 all the same.
	editWorkload(t, c, key(ns, "orders"), func(w *polykubev1alpha1.Workload) { setTargets(w, map[string]int32{east: 3}) })
	Eventually(func(g Gomega) {
		g.Expect(*getDeployment(g, c, ns, "orders").Spec.Replicas).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "the Workload must scale from 1 to 3 although one binding's Secret cannot be read")

	// The binding says why, and so does the Workload, naming it.
	cond, _ := eventuallyBound(t, c, ns, metav1.ConditionFalse, polykubev1alpha1.ReasonSecretUnreadable)
	Expect(cond.Message).To(ContainSubstring("forbidden"))
	Eventually(func(g Gomega) {
		w := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(ctx, key(ns, "orders"), w)).To(Succeed())
		sr := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.SecretsReadableCondition)
		g.Expect(sr).NotTo(BeNil())
		g.Expect(sr.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(sr.Reason).To(Equal(polykubev1alpha1.ReasonSecretUnreadable))
		g.Expect(sr.Message).To(ContainSubstring("DatastoreBinding orders-db"))
		g.Expect(sr.Message).To(ContainSubstring("forbidden"))
		g.Expect(sr.ObservedGeneration).To(Equal(w.Generation))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	// Nothing of the binding was wired: its Secret could not be checked.
	for _, ct := range getDeployment(Default, c, ns, "orders").Spec.Template.Spec.Containers {
		for _, e := range ct.Env {
			Expect(e.Name).NotTo(HavePrefix("DB_"), "an env var of a binding whose Secret could not be read was wired")
		}
	}
}
