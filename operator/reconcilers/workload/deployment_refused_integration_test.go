package workload_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

// Issue 33, defect 9: template content that the Workload CRD's schema accepts but the Deployment
// API refuses (here a container name that is no DNS label) was retried forever as
// ReconcileFailed. It is a spec error: InvalidSpec, saying what the API server refused and
// that the Workload must be fixed; a Deployment already running stays as it is.
func TestReconciler_DeploymentRefused_InvalidSpec(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "deployment-refused")
	startOperator(t, east)

	wl := workload(ns, "api", map[string]int32{east: 2})
	Expect(c.Create(ctx, wl)).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	before := getDeployment(Default, c, ns, "api")

	// An update only the Deployment API refuses.
	editWorkload(t, c, key(ns, "api"), func(w *polykubev1alpha1.Workload) { w.Spec.Template.Spec.Containers[0].Name = "App_Main" })
	cond := eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec)
	Expect(cond.Message).To(ContainSubstring("the API server refused the Deployment"))
	Expect(cond.Message).To(ContainSubstring("App_Main"))
	Expect(cond.Message).To(ContainSubstring("fix spec.template"))
	Expect(getDeployment(Default, c, ns, "api").ResourceVersion).To(Equal(before.ResourceVersion), "the running Deployment is left as it is")

	// A new Workload that the Deployment API refuses from the start.
	bad := workload(ns, "fresh", map[string]int32{east: 1})
	bad.Spec.Template.Spec.Containers[0].Name = "App_Main"
	Expect(c.Create(ctx, bad)).To(Succeed())
	t.Cleanup(func() { _ = c.Delete(context.Background(), bad) })
	cond = eventuallyReady(t, c, ns, "fresh", metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec)
	Expect(cond.Message).To(ContainSubstring("the API server refused the Deployment"))
	// Later tests' operators would log its terminal error again.
	Expect(c.Delete(ctx, wl)).To(Succeed())
}
