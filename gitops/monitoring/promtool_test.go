package monitoring_test

import (
	"os"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/testbed/promserver"
)

// The alert rules are unit-tested by promtool itself (testdata/alerts.test.yaml): input series,
// and the alerts that must fire, and must not, at given times. promtool comes from the toolchain
// (`make tools` builds the prometheus group); the test fails when it is missing, never skips.

const alertTests = "testdata/alerts.test.yaml"

// ruleGroups returns the rule groups of the PrometheusRule as a Prometheus rules file.
func ruleGroups(t *testing.T) []byte {
	t.Helper()
	raw, err := os.ReadFile("prometheusrule.yaml")
	if err != nil {
		t.Fatal(err)
	}
	out, err := promserver.RulesFile(raw)
	if err != nil {
		t.Fatalf("prometheusrule.yaml: %v", err)
	}
	return out
}

// Every alert of the PrometheusRule has a promtool test in which it fires and one in which it
// must not, so a new alert cannot go untested.
func TestMonitoring_EveryAlertHasPromtoolTests(t *testing.T) {
	g := NewWithT(t)
	var rules struct {
		Groups []struct {
			Rules []struct {
				Alert string `json:"alert"`
			} `json:"rules"`
		} `json:"groups"`
	}
	g.Expect(yaml.Unmarshal(ruleGroups(t), &rules)).To(Succeed())
	raw, err := os.ReadFile(alertTests)
	g.Expect(err).NotTo(HaveOccurred())
	var tests struct {
		Tests []struct {
			AlertRuleTest []struct {
				Alertname string `json:"alertname"`
				ExpAlerts []any  `json:"exp_alerts"`
			} `json:"alert_rule_test"`
		} `json:"tests"`
	}
	g.Expect(yaml.Unmarshal(raw, &tests)).To(Succeed())
	var fires, quiet []string
	for _, tt := range tests.Tests {
		for _, a := range tt.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires = append(fires, a.Alertname)
			} else {
				quiet = append(quiet, a.Alertname)
			}
		}
	}
	var alerts []string
	for _, grp := range rules.Groups {
		for _, r := range grp.Rules {
			if r.Alert != "" {
				alerts = append(alerts, r.Alert)
			}
		}
	}
	g.Expect(alerts).NotTo(BeEmpty())
	for _, a := range alerts {
		g.Expect(slices.Contains(fires, a)).To(BeTrue(), "%s has no promtool test in which it fires (%s)", a, alertTests)
		g.Expect(slices.Contains(quiet, a)).To(BeTrue(), "%s has no promtool test in which it must not fire (%s)", a, alertTests)
	}
}
