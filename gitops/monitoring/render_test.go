// Package monitoring_test renders the monitoring base with the kustomize library and decodes
// every object strictly into the Prometheus Operator's own types, so a misspelt field fails
// here rather than being dropped by the API server.
package monitoring_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	monitoringv1 "github.com/prometheus-operator/prometheus-operator/pkg/apis/monitoring/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/resmap"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

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
				t.Fatalf("decode %s/%s strictly: %v", kind, name, err)
			}
			return out
		}
	}
	t.Fatalf("the rendered base has no %s %s", kind, name)
	return nil
}

func TestMonitoring_ServiceMonitorScrapesTheOperatorsMetricsService(t *testing.T) {
	g := NewWithT(t)
	m := render(t, ".")
	var objects []string
	for _, r := range m.Resources() {
		objects = append(objects, r.GetKind()+"/"+r.GetNamespace()+"/"+r.GetName())
	}
	g.Expect(objects).To(ConsistOf("ServiceMonitor/polykube-system/polykube-operator", "PrometheusRule/polykube-system/polykube-operator"))

	sm := decode[monitoringv1.ServiceMonitor](t, m, "ServiceMonitor", "polykube-operator")
	svc := decode[corev1.Service](t, render(t, "../operator"), "Service", "polykube-operator-metrics")
	sel := labels.SelectorFromSet(sm.Spec.Selector.MatchLabels)
	g.Expect(sel.Matches(labels.Set(svc.Labels))).To(BeTrue(), "the ServiceMonitor's selector %v must select the metrics Service (labels %v)", sel, svc.Labels)
	g.Expect(sm.Spec.Endpoints).To(HaveLen(1))
	ep := sm.Spec.Endpoints[0]
	g.Expect(ep.Port).To(Equal(svc.Spec.Ports[0].Name))
	g.Expect(ep.Scheme).To(HaveValue(BeEquivalentTo("https")))
	g.Expect(ep.BearerTokenFile).NotTo(BeEmpty(), "the operator refuses a scrape without a token")
}

// Every metric an alert reads is one the operator serves (docs/metrics.md lists them, and
// operator/internal/metrics checks that list against its registry), and every alert says what
// to do.
func TestMonitoring_AlertsReadDocumentedMetrics(t *testing.T) {
	g := NewWithT(t)
	rule := decode[monitoringv1.PrometheusRule](t, render(t, "."), "PrometheusRule", "polykube-operator")
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	g.Expect(err).NotTo(HaveOccurred())
	name := regexp.MustCompile(`\bpolykube_[a-z_]+`)
	var alerts []string
	for _, group := range rule.Spec.Groups {
		for _, r := range group.Rules {
			alerts = append(alerts, r.Alert)
			g.Expect(r.Annotations).To(HaveKey("summary"), r.Alert)
			g.Expect(r.Annotations).To(HaveKey("description"), r.Alert)
			g.Expect(r.Labels).To(HaveKeyWithValue("severity", BeElementOf("warning", "critical")), r.Alert)
			for _, metric := range name.FindAllString(r.Expr.String(), -1) {
				g.Expect(string(doc)).To(ContainSubstring("`"+metric+"`"), "alert %s reads %s, which docs/metrics.md does not list", r.Alert, metric)
			}
			g.Expect(strings.Contains(string(doc), r.Alert)).To(BeTrue(), "docs/metrics.md does not describe alert %s", r.Alert)
		}
	}
	slices.Sort(alerts)
	g.Expect(alerts).To(ContainElements("PolykubeFailoverActiveTooLong", "PolykubeIdentityRefused", "PolykubeReconcileErrors"))
}
