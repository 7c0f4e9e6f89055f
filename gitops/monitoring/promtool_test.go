package monitoring_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/promserver"
)

// The alert rules are unit-tested by promtool itself (testdata/alerts.test.yaml): input series,
// and the alerts that must fire, and must not, at given times. promtool comes from the toolchain
// (`make tools` builds the prometheus group); the test fails when it is missing, never skips.

const alertTests = "testdata/alerts.test.yaml"

// tool resolves a pinned tool of the prometheus group without building it: `make tools` builds
// them; a missing one fails the test.
func tool(t *testing.T, name string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	tc, err := toolchain.New(toolchain.Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	r, err := tc.Resolve(ctx, name)
	if err != nil {
		t.Fatalf("%s %s (release %s) is needed here: %v", name, toolchain.PrometheusVersion, toolchain.PrometheusRelease, err)
	}
	return r.Path
}

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

func TestMonitoring_PromtoolTestRules(t *testing.T) {
	g := NewWithT(t)
	bin := tool(t, toolchain.Promtool)
	dir := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(dir, "rules.yaml"), ruleGroups(t), 0o644)).To(Succeed())
	tests, err := os.ReadFile(alertTests)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(dir, "alerts.test.yaml"), tests, 0o644)).To(Succeed())

	// check rules first: a rule that does not load would otherwise show only as failed tests.
	for _, args := range [][]string{{"check", "rules", "rules.yaml"}, {"test", "rules", "alerts.test.yaml"}} {
		cmd := exec.Command(bin, args...)
		cmd.Dir = dir
		out, err := cmd.CombinedOutput()
		t.Logf("promtool %v:\n%s", args, out)
		g.Expect(err).NotTo(HaveOccurred(), "promtool %v failed:\n%s", args, out)
	}
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
