// Package operator_test renders the Flux operator base with the kustomize library (what
// `kustomize build gitops/operator` and Flux's kustomize-controller run) and checks what a
// member cluster receives.
package operator_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

const image = "ghcr.io/polykube/operator"

func render(t *testing.T, dir string) resmap.ResMap {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	return m
}

func decode[T any](t *testing.T, m resmap.ResMap, kind, name string) *T {
	t.Helper()
	for _, r := range m.Resources() {
		if r.GetKind() == kind && r.GetName() == name {
			raw, err := r.AsYAML()
			if err != nil {
				t.Fatalf("%s/%s as YAML: %v", kind, name, err)
			}
			out := new(T)
			if err := yaml.UnmarshalStrict(raw, out); err != nil {
				t.Fatalf("decode %s/%s: %v", kind, name, err)
			}
			return out
		}
	}
	t.Fatalf("the rendered base has no %s %s", kind, name)
	return nil
}

func TestBase_RendersTheOperator(t *testing.T) {
	g := NewWithT(t)
	m := render(t, ".")

	var objects []string
	for _, r := range m.Resources() {
		objects = append(objects, r.GetKind()+"/"+r.GetName())
		if ns := r.GetNamespace(); ns != "" {
			g.Expect(ns).To(Equal("polykube-system"), "%s/%s", r.GetKind(), r.GetName())
		}
	}
	g.Expect(objects).To(ConsistOf(
		"Namespace/polykube-system",
		"CustomResourceDefinition/clustermembers.polykube.kismet.io",
		"CustomResourceDefinition/federations.polykube.kismet.io",
		"CustomResourceDefinition/workloads.polykube.kismet.io",
		"CustomResourceDefinition/serviceendpoints.polykube.kismet.io",
		"CustomResourceDefinition/datastorebindings.polykube.kismet.io",
		"ServiceAccount/polykube-operator",
		"ClusterRole/polykube-operator",
		"ClusterRoleBinding/polykube-operator",
		"Role/polykube-operator",
		"RoleBinding/polykube-operator",
		"Deployment/polykube-operator",
		"PodDisruptionBudget/polykube-operator",
		"PriorityClass/polykube-operator",
		"Service/polykube-operator-metrics",
		"ClusterRole/polykube-metrics-reader",
	))

	// Every CRD controller-gen writes is delivered.
	bases, err := filepath.Glob("../../operator/config/crd/bases/*.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bases).To(HaveLen(5), "a new CRD must be listed in operator/config/crd/kustomization.yaml")

	d := decode[appsv1.Deployment](t, m, "Deployment", "polykube-operator")
	pod := d.Spec.Template.Spec
	g.Expect(pod.ServiceAccountName).To(Equal("polykube-operator"))
	g.Expect(pod.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	g.Expect(pod.Containers).To(HaveLen(1))
	c := pod.Containers[0]
	g.Expect(c.Image).To(Equal(image + ":v0.1.0-alpha.1"))
	g.Expect(c.Args).To(ContainElements("--cluster-name=${CLUSTER_NAME}", "--leader-elect"))
	g.Expect(c.SecurityContext.ReadOnlyRootFilesystem).To(HaveValue(BeTrue()))
	g.Expect(c.SecurityContext.AllowPrivilegeEscalation).To(HaveValue(BeFalse()))
	g.Expect(c.SecurityContext.Capabilities.Drop).To(ContainElement(corev1.Capability("ALL")))
	g.Expect(c.Args).To(ContainElement("--health-probe-bind-address=:8081"))
	g.Expect(c.Ports).To(ContainElement(corev1.ContainerPort{Name: "health", ContainerPort: 8081}))
	g.Expect(c.LivenessProbe.HTTPGet.Path).To(Equal("/healthz"))
	g.Expect(c.LivenessProbe.HTTPGet.Port.String()).To(Equal("health"))
	g.Expect(c.ReadinessProbe.HTTPGet.Path).To(Equal("/readyz"))
	g.Expect(c.ReadinessProbe.HTTPGet.Port.String()).To(Equal("health"))
	g.Expect(c.Args).To(ContainElement("--metrics-bind-address=:8443"))
	g.Expect(c.Ports).To(ContainElement(corev1.ContainerPort{Name: "metrics", ContainerPort: 8443}))

	crb := decode[rbacv1.ClusterRoleBinding](t, m, "ClusterRoleBinding", "polykube-operator")
	g.Expect(crb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "polykube-operator", Namespace: "polykube-system"}))
	rb := decode[rbacv1.RoleBinding](t, m, "RoleBinding", "polykube-operator")
	g.Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "polykube-operator", Namespace: "polykube-system"}))
}

// Deleting, renaming or emptying the operator's Kustomization (or Argo CD Application) must
// not delete the CRDs (and with them every Workload, and every Deployment they own) nor the
// namespace that holds the identity pin (issue 12, defect 2). The scenario "Removing the
// operator's Kustomization deletes no workload" proves the same with Flux on a real cluster.
func TestBase_CRDsAndNamespaceCannotBePruned(t *testing.T) {
	g := NewWithT(t)
	m := render(t, ".")
	var protected []string
	for _, r := range m.Resources() {
		if r.GetKind() != "CustomResourceDefinition" && r.GetKind() != "Namespace" {
			continue
		}
		a := r.GetAnnotations()
		g.Expect(a).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/prune", "disabled"), "%s/%s: Flux must never prune it", r.GetKind(), r.GetName())
		g.Expect(a).To(HaveKeyWithValue("argocd.argoproj.io/sync-options", "Prune=false,Delete=false"), "%s/%s: Argo CD must never prune or delete it", r.GetKind(), r.GetName())
		protected = append(protected, r.GetKind()+"/"+r.GetName())
	}
	g.Expect(protected).To(HaveLen(6), "five CRDs and the namespace")
	for _, r := range m.Resources() {
		if r.GetKind() == "Deployment" || r.GetKind() == "ServiceAccount" {
			g.Expect(r.GetAnnotations()).NotTo(HaveKey("kustomize.toolkit.fluxcd.io/prune"), "%s/%s: removing the operator from Git still removes it", r.GetKind(), r.GetName())
		}
	}
}

// Two replicas, one of which leads (--leader-elect), kept through drains by a budget of one, spread
// over nodes and zones, scheduled ahead of the workloads they run.
func TestBase_IsHighlyAvailable(t *testing.T) {
	g := NewWithT(t)
	m := render(t, ".")
	d := decode[appsv1.Deployment](t, m, "Deployment", "polykube-operator")
	g.Expect(d.Spec.Replicas).To(HaveValue(BeEquivalentTo(2)))
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--leader-elect"), "two replicas must not both reconcile")
	pdb := decode[policyv1.PodDisruptionBudget](t, m, "PodDisruptionBudget", "polykube-operator")
	g.Expect(pdb.Spec.MinAvailable.IntValue()).To(Equal(1))
	g.Expect(pdb.Spec.Selector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels))
	pod := d.Spec.Template.Spec
	pc := decode[schedulingv1.PriorityClass](t, m, "PriorityClass", "polykube-operator")
	g.Expect(pod.PriorityClassName).To(Equal(pc.Name))
	g.Expect(pc.Value).To(BeNumerically("<", 1000000000), "values above one billion are reserved for system classes")
	g.Expect(pc.GlobalDefault).To(BeFalse())
	var keys []string
	for _, tsc := range pod.TopologySpreadConstraints {
		keys = append(keys, tsc.TopologyKey)
		g.Expect(tsc.LabelSelector.MatchLabels).To(Equal(d.Spec.Selector.MatchLabels))
		g.Expect(tsc.WhenUnsatisfiable).To(Equal(corev1.ScheduleAnyway), "a one-node cluster must still run both replicas")
	}
	g.Expect(keys).To(ConsistOf("kubernetes.io/hostname", "topology.kubernetes.io/zone"))
}

// A rollout whose new pod never becomes ready (install.yaml applied with its cluster name left
// unset: the operator refuses to start) replaces none of the pods that run: the Deployment rolls
// by RollingUpdate (the default; Recreate would stop them first), taking no replica down before
// a new one is ready. The install scenario relies on it on kind ("still runs the operator binary
// it ran before"); install.yaml and the chart are rendered from this base.
func TestBase_ARefusedRolloutKeepsThePodsThatRun(t *testing.T) {
	g := NewWithT(t)
	d := decode[appsv1.Deployment](t, render(t, "."), "Deployment", "polykube-operator")
	g.Expect(d.Spec.Strategy.Type).To(BeElementOf(appsv1.DeploymentStrategyType(""), appsv1.RollingUpdateDeploymentStrategyType))
	maxUnavailable := intstr.FromString("25%") // the API server's default
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxUnavailable != nil {
		maxUnavailable = *ru.MaxUnavailable
	}
	// Rounded down, as the Deployment controller rounds it.
	down, err := intstr.GetScaledValueFromIntOrPercent(&maxUnavailable, int(*d.Spec.Replicas), false)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(down).To(BeZero(), "maxUnavailable %s of %d replicas", maxUnavailable.String(), *d.Spec.Replicas)
}

// The metrics Service reaches the Deployment's metrics port, and polykube-metrics-reader grants
// exactly what the endpoint's SubjectAccessReview asks: get on /metrics.
func TestBase_ServesMetricsToTheReaderRole(t *testing.T) {
	g := NewWithT(t)
	m := render(t, ".")
	d := decode[appsv1.Deployment](t, m, "Deployment", "polykube-operator")
	svc := decode[corev1.Service](t, m, "Service", "polykube-operator-metrics")
	g.Expect(svc.Spec.Selector).To(Equal(d.Spec.Selector.MatchLabels))
	g.Expect(svc.Spec.Ports).To(HaveLen(1))
	g.Expect(svc.Spec.Ports[0].TargetPort.String()).To(Equal("metrics"))
	reader := decode[rbacv1.ClusterRole](t, m, "ClusterRole", "polykube-metrics-reader")
	g.Expect(reader.Rules).To(ConsistOf(rbacv1.PolicyRule{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}))
	cr := decode[rbacv1.ClusterRole](t, m, "ClusterRole", "polykube-operator")
	g.Expect(cr.Rules).To(ContainElements(
		rbacv1.PolicyRule{APIGroups: []string{"authentication.k8s.io"}, Resources: []string{"tokenreviews"}, Verbs: []string{"create"}},
		rbacv1.PolicyRule{APIGroups: []string{"authorization.k8s.io"}, Resources: []string{"subjectaccessreviews"}, Verbs: []string{"create"}},
	), "the endpoint checks each scraper's token and rights")
}

func TestBase_RBACIsLeastPrivilege(t *testing.T) {
	g := NewWithT(t)
	m := render(t, ".")
	cr := decode[rbacv1.ClusterRole](t, m, "ClusterRole", "polykube-operator")
	role := decode[rbacv1.Role](t, m, "Role", "polykube-operator")
	for _, rule := range append(cr.Rules, role.Rules...) {
		for _, field := range [][]string{rule.APIGroups, rule.Resources, rule.Verbs} {
			g.Expect(field).NotTo(ContainElement("*"), "no wildcard in %+v", rule)
		}
		g.Expect(rule.NonResourceURLs).To(BeEmpty())
		if slices.Contains(rule.Resources, "secrets") {
			g.Expect(rule.Verbs).To(Equal([]string{"get"}), "Secrets are read one by one, never listed or watched")
		}
		if slices.ContainsFunc(rule.Resources, func(r string) bool { return strings.HasSuffix(r, "/status") }) {
			g.Expect(rule.Verbs).To(Equal([]string{"patch"}), "status is only patched")
		}
	}
	g.Expect(role.Rules).To(ContainElement(HaveField("Resources", ContainElement("leases"))), "leader election needs a Lease")
	g.Expect(cr.Rules).NotTo(ContainElement(HaveField("Resources", ContainElement("leases"))), "leases only in the operator's namespace")
}

func TestBase_OnlyClusterNameIsSubstituted(t *testing.T) {
	// Flux's postBuild substitution replaces every ${VAR} in the rendered manifests: anything
	// but ${CLUSTER_NAME} would be blanked.
	raw, err := render(t, ".").AsYaml()
	NewWithT(t).Expect(err).NotTo(HaveOccurred())
	vars := regexp.MustCompile(`\$\{[^}]*\}`).FindAllString(string(raw), -1)
	NewWithT(t).Expect(vars).To(ConsistOf("${CLUSTER_NAME}"))
}

func TestBase_ImageCanBeOverridden(t *testing.T) {
	g := NewWithT(t)
	base, err := filepath.Abs(".")
	g.Expect(err).NotTo(HaveOccurred())
	overlay := t.TempDir()
	rel, err := filepath.Rel(overlay, base)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(overlay, "kustomization.yaml"), []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - `+rel+`
images:
  - name: `+image+`
    newName: registry.example.com/polykube/operator
    newTag: dev
`), 0o644)).To(Succeed())
	d := decode[appsv1.Deployment](t, render(t, overlay), "Deployment", "polykube-operator")
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/polykube/operator:dev"))
}
