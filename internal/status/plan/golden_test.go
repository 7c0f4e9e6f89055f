package plan

import (
	"bytes"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/golden"
	"github.com/polykube/polykube/internal/status"
)

func TestPlan_Golden(t *testing.T) {
	g := NewWithT(t)
	old := []string{filepath.Join("testdata", "plan", "old")}
	newer := []string{filepath.Join("testdata", "plan", "new")}
	invalid := []string{filepath.Join("testdata", "plan", "invalid", "bad.yaml")}

	p, err := Plan(old, "", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.ExitCode).To(Equal(status.ExitOK))
	beta, err := Plan(newer, "beta", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	bad, err := Plan(invalid, "", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(bad.ExitCode).To(Equal(status.ExitInvalidManifest))
	d, err := Diff(old, newer, LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	fleet := []string{filepath.Join("testdata", "plan", "fleet")}
	alpha, err := Plan(fleet, "alpha", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(alpha.ExitCode).To(Equal(status.ExitOK))
	gammaDown, err := PlanScoped(fleet, Scope{AssumeDown: []string{"gamma"}}, LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	alphaGammaDown, err := PlanScoped(fleet, Scope{Cluster: "alpha", AssumeDown: []string{"gamma"}}, LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())

	tests := []struct {
		file  string
		print func(*bytes.Buffer) error
	}{
		{"plan.table.golden", func(b *bytes.Buffer) error { return PrintPlan(b, p, status.FormatTable, status.PrintOptions{}) }},
		{"plan.json.golden", func(b *bytes.Buffer) error { return PrintPlan(b, p, status.FormatJSON, status.PrintOptions{}) }},
		{"plan.yaml.golden", func(b *bytes.Buffer) error { return PrintPlan(b, p, status.FormatYAML, status.PrintOptions{}) }},
		{"plan-cluster.table.golden", func(b *bytes.Buffer) error { return PrintPlan(b, beta, status.FormatTable, status.PrintOptions{}) }},
		{"plan-invalid.table.golden", func(b *bytes.Buffer) error { return PrintPlan(b, bad, status.FormatTable, status.PrintOptions{}) }},
		{"plan-diff.table.golden", func(b *bytes.Buffer) error { return PrintDiff(b, d, status.FormatTable, status.PrintOptions{}) }},
		{"plan-diff.json.golden", func(b *bytes.Buffer) error { return PrintDiff(b, d, status.FormatJSON, status.PrintOptions{}) }},
		{"plan-rendered.table.golden", func(b *bytes.Buffer) error { return PrintPlan(b, alpha, status.FormatTable, status.PrintOptions{}) }},
		{"plan-rendered.yaml.golden", func(b *bytes.Buffer) error { return PrintPlan(b, alpha, status.FormatYAML, status.PrintOptions{}) }},
		{"plan-assume-down.table.golden", func(b *bytes.Buffer) error { return PrintPlan(b, gammaDown, status.FormatTable, status.PrintOptions{}) }},
		{"plan-assume-down.json.golden", func(b *bytes.Buffer) error { return PrintPlan(b, gammaDown, status.FormatJSON, status.PrintOptions{}) }},
		{"plan-assume-down-cluster.table.golden", func(b *bytes.Buffer) error {
			return PrintPlan(b, alphaGammaDown, status.FormatTable, status.PrintOptions{})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			var b bytes.Buffer
			if err := tt.print(&b); err != nil {
				t.Fatalf("print: %v", err)
			}
			golden.Assert(t, tt.file, b.Bytes())
		})
	}
}
