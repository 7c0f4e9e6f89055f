package workload_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/placement"
)

// setMemberLabels replaces the labels of the ClusterMember named cluster and restores them when
// the test ends (the ClusterMembers are shared by the tests of this package).
func setMemberLabels(t *testing.T, c client.Client, cluster string, l map[string]string) {
	t.Helper()
	ctx := context.Background()
	m := &polykubev1alpha1.ClusterMember{}
	Expect(c.Get(ctx, types.NamespacedName{Name: cluster}, m)).To(Succeed())
	old := m.Spec.Labels
	patched := m.DeepCopy()
	patched.Spec.Labels = l
	Expect(c.Patch(ctx, patched, client.MergeFrom(m))).To(Succeed())
	t.Cleanup(func() {
		m := &polykubev1alpha1.ClusterMember{}
		if err := c.Get(ctx, types.NamespacedName{Name: cluster}, m); err != nil {
			t.Errorf("restore the labels of ClusterMember %s: %v", cluster, err)
			return
		}
		restored := m.DeepCopy()
		restored.Spec.Labels = old
		if err := c.Update(ctx, restored); err != nil {
			t.Errorf("restore the labels of ClusterMember %s: %v", cluster, err)
		}
	})
}

func TestReconciler_Overrides_DeploymentFromTheEffectiveTemplate(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "overrides")
	startOperator(t, east)

	wl := workload(ns, "billing", map[string]int32{east: 2, "west": 1})
	wl.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}
	wl.Spec.Overrides = []polykubev1alpha1.WorkloadOverride{
		{
			Name:            "east-mirror",
			ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{east}},
			Images:          []polykubev1alpha1.ImageOverride{{Container: "app", Registry: "mirror.east.example.com:5000"}},
		},
		{
			Name:            "west-only",
			ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{"west"}},
			NodeSelector:    map[string]string{"rack": "w1"},
		},
		{
			Name: "gold",
			ClusterSelector: polykubev1alpha1.ClusterSelector{LabelSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"tier": "gold", polykubev1alpha1.ProviderLabel: "kwok"}}},
			Env:       []polykubev1alpha1.EnvOverride{{Container: "app", Set: []corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}}},
			PodLabels: map[string]string{"tier": "gold"},
		},
	}
	Expect(c.Create(ctx, wl)).To(Succeed())

	wantStatus := func(g Gomega, applied ...string) {
		w := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(ctx, key(ns, "billing"), w)).To(Succeed())
		g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
		g.Expect(w.Status.AppliedOverrides).To(Equal(applied))
		m := &polykubev1alpha1.ClusterMember{}
		g.Expect(c.Get(ctx, types.NamespacedName{Name: east}, m)).To(Succeed())
		tmpl, _, err := placement.EffectiveTemplate(w.Spec, m)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(w.Status.EffectiveTemplateHash).To(Equal(placement.TemplateHash(tmpl)),
			"status.effectiveTemplateHash is what polykube-status recomputes from the spec and the ClusterMember")
		g.Expect(w.Status.SpecHash).To(Equal(placement.SpecHash(w.Spec)), "the spec hash keeps its meaning")
	}

	// Only the override naming east applies here; the one for west and the one for gold
	// clusters do not.
	Eventually(func(g Gomega) {
		wantStatus(g, "east-mirror")
		d := getDeployment(g, c, ns, "billing")
		app := d.Spec.Template.Spec.Containers[0]
		g.Expect(app.Image).To(Equal("mirror.east.example.com:5000/billing:v1"))
		g.Expect(app.Env).To(Equal([]corev1.EnvVar{{Name: "LOG_LEVEL", Value: "info"}}))
		g.Expect(d.Spec.Template.Spec.NodeSelector).To(BeEmpty())
		g.Expect(d.Spec.Template.Labels).NotTo(HaveKey("tier"))
		g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue(polykubev1alpha1.WorkloadNameLabel, "billing"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// East joins the gold tier by its roster entry alone: nobody edits the Workload, and the
	// later override applies on top of the earlier one.
	setMemberLabels(t, c, east, map[string]string{"tier": "gold"})
	Eventually(func(g Gomega) {
		wantStatus(g, "east-mirror", "gold")
		d := getDeployment(g, c, ns, "billing")
		app := d.Spec.Template.Spec.Containers[0]
		g.Expect(app.Image).To(Equal("mirror.east.example.com:5000/billing:v1"))
		g.Expect(app.Env).To(Equal([]corev1.EnvVar{{Name: "LOG_LEVEL", Value: "debug"}}))
		g.Expect(d.Spec.Template.Labels).To(HaveKeyWithValue("tier", "gold"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

func TestReconciler_InvalidOverride_TerminalAndDeploymentUnchanged(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "badoverride")
	startOperator(t, east)

	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 1}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	before := getDeployment(NewWithT(t), c, ns, "api")

	// The API server cannot validate a label selector's operator; the operator can, and it
	// says so for every cluster, whether or not the broken override selects it.
	w := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, key(ns, "api"), w)).To(Succeed())
	broken := w.DeepCopy()
	broken.Spec.Overrides = []polykubev1alpha1.WorkloadOverride{{
		Name: "west-nearby",
		ClusterSelector: polykubev1alpha1.ClusterSelector{ClusterNames: []string{"west"}, LabelSelector: &metav1.LabelSelector{
			MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "tier", Operator: "Near", Values: []string{"gold"}}}}},
		NodeSelector: map[string]string{"rack": "w1"},
	}}
	Expect(c.Patch(ctx, broken, client.MergeFrom(w))).To(Succeed())

	cond := eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec)
	Expect(cond.Message).To(ContainSubstring(`spec.overrides[0] "west-nearby"`))
	Expect(cond.Message).To(ContainSubstring("clusterSelector.labelSelector"))
	Expect(c.Get(ctx, key(ns, "api"), w)).To(Succeed())
	Expect(w.Status.AppliedOverrides).To(BeEmpty())
	Expect(w.Status.EffectiveTemplateHash).To(BeEmpty())
	Consistently(func(g Gomega) {
		d := getDeployment(g, c, ns, "api")
		g.Expect(d.UID).To(Equal(before.UID))
		g.Expect(d.Generation).To(Equal(before.Generation), "the running Deployment is left as it is")
	}).WithTimeout(2 * time.Second).WithPolling(poll).Should(Succeed())
}
