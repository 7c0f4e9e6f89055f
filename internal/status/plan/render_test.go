package plan

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/placement"
)

var fleetDir = filepath.Join("testdata", "plan", "fleet")

func plannedNamed(g Gomega, p PlanReport, name string) PlannedWorkload {
	for _, w := range p.Workloads {
		if w.Name == name {
			return w
		}
	}
	g.Expect(p.Workloads).To(ContainElement(HaveField("Name", name)))
	return PlannedWorkload{}
}

func TestPlan_Cluster_RendersTheDeploymentFromTheEffectiveTemplate(t *testing.T) {
	g := NewWithT(t)
	p, err := Plan([]string{fleetDir}, "gamma", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Invalid).To(BeEmpty())

	w := plannedNamed(g, p, "checkout")
	g.Expect(w.NotRendered).To(BeEmpty())
	d := w.Deployment
	g.Expect(d).NotTo(BeNil())
	g.Expect(d.AppliedOverrides).To(Equal([]string{"onprem-memory"}))
	g.Expect(d.Images).To(Equal([]string{"api=registry.example/checkout:2.4.0"}))
	g.Expect(d.Replicas).To(BeEquivalentTo(3))

	obj := d.Object
	g.Expect(obj.Name).To(Equal("checkout"))
	g.Expect(obj.Namespace).To(Equal("shop"))
	g.Expect(obj.Labels).To(Equal(map[string]string{
		polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.WorkloadNameLabel: "checkout", polykubev1alpha1.ClusterLabel: "gamma",
	}))
	g.Expect(*obj.Spec.Replicas).To(BeEquivalentTo(3))
	g.Expect(obj.Spec.Selector.MatchLabels).To(Equal(map[string]string{polykubev1alpha1.WorkloadNameLabel: "checkout"}))
	// The pods carry the cluster's name, as the operator's do (the plan showed pods without it
	// until both built the Deployment with placement.Deployment).
	g.Expect(obj.Spec.Template.Labels).To(Equal(map[string]string{"app": "checkout", polykubev1alpha1.WorkloadNameLabel: "checkout", polykubev1alpha1.ClusterLabel: "gamma"}))
	g.Expect(obj.Spec.Template.Spec.NodeSelector).To(Equal(map[string]string{"rack": "1"}))
	g.Expect(obj.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory]).To(Equal(resource.MustParse("2Gi")))

	// The hash is the one the operator of gamma writes to status.effectiveTemplateHash: the
	// effective template without the selector and cluster labels the Deployment adds.
	tmpl := obj.Spec.Template.DeepCopy()
	delete(tmpl.Labels, polykubev1alpha1.WorkloadNameLabel)
	delete(tmpl.Labels, polykubev1alpha1.ClusterLabel)
	g.Expect(placement.TemplateHash(*tmpl)).To(Equal(d.EffectiveTemplateHash))

	// checkout declares a port: the Service of gamma's operator is rendered beside it, with
	// the operator's function.
	g.Expect(w.Service).To(Equal(placement.Service(checkoutSpec(g, p), "gamma")))
	g.Expect(w.Service.Labels).To(HaveKeyWithValue(polykubev1alpha1.ClusterLabel, "gamma"))
	g.Expect(w.Service.Spec.Ports).To(HaveLen(1))
	g.Expect(w.Service.Spec.Ports[0].TargetPort.IntValue()).To(Equal(8080))
	// ledger declares none: no Service.
	g.Expect(plannedNamed(g, p, "ledger").Service).To(BeNil())

	// Not a target: nothing is rendered.
	p, err = Plan([]string{fleetDir}, "alpha", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	reports := plannedNamed(g, p, "reports")
	g.Expect(reports.Targeted).To(HaveValue(BeFalse()))
	g.Expect(reports.Deployment).To(BeNil())
	g.Expect(reports.NotRendered).To(BeEmpty())
}

func TestPlan_Cluster_WithoutItsClusterMember(t *testing.T) {
	g := NewWithT(t)
	// Only the workloads, not the roster: the overrides cannot be evaluated.
	p, err := Plan([]string{filepath.Join(fleetDir, "workloads.yaml")}, "alpha", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.ExitCode).To(Equal(status.ExitOK), "a missing roster is not an invalid manifest")

	checkout := plannedNamed(g, p, "checkout")
	g.Expect(checkout.Deployment).To(BeNil())
	g.Expect(checkout.NotRendered).To(Equal("no ClusterMember named alpha in the paths read, and the overrides select on it: add the roster's manifests (-f) to render its Deployment"))
	// A Workload without overrides renders the same in every cluster.
	g.Expect(plannedNamed(g, p, "ledger").Deployment).NotTo(BeNil())

	var b bytes.Buffer
	g.Expect(PrintPlan(&b, p, status.FormatTable, status.PrintOptions{})).To(Succeed())
	g.Expect(b.String()).To(MatchRegexp(`checkout\s+shop\s+MultiCloudWeighted\s+3\s+9\s+not rendered\s+not rendered`))
	g.Expect(b.String()).To(ContainSubstring("NOT RENDERED"))
	g.Expect(b.String()).To(MatchRegexp(`workloads.yaml:1\s+shop/checkout\s+no ClusterMember named alpha`))
}

func TestPlan_InvalidOverridesAreInvalidManifests(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	raw, err := os.ReadFile(filepath.Join(fleetDir, "workloads.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	writeFile(t, dir, "w.yaml", strings.Replace(string(raw), "        - container: api\n          registry: mirror.eu.example", "        - container: web\n          registry: mirror.eu.example", 1))

	// Whatever the cluster (and without one): the error depends on the spec alone.
	for _, cluster := range []string{"", "beta"} {
		p, err := Plan([]string{dir}, cluster, LoadOptions{})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(p.ExitCode).To(Equal(status.ExitInvalidManifest))
		g.Expect(p.Invalid).To(HaveLen(1))
		g.Expect(p.Invalid[0].Name).To(Equal("shop/checkout"))
		g.Expect(p.Invalid[0].Reason).To(Equal(`invalid override: spec.overrides[0] "eu-mirror": images[0]: the template has no container "web": ` +
			`fix the Workload (every operator reports Ready=False, reason InvalidSpec, and leaves what runs as it is)`))
		g.Expect(p.Workloads).To(HaveLen(2))
	}
}

// checkoutSpec is the checkout Workload as the fleet corpus declares it (name, namespace, ports).
func checkoutSpec(g Gomega, p PlanReport) *polykubev1alpha1.Workload {
	w := plannedNamed(g, p, "checkout")
	return &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: w.Name, Namespace: w.Namespace},
		Spec:       polykubev1alpha1.WorkloadSpec{Ports: []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80, TargetPort: 8080}}},
	}
}
