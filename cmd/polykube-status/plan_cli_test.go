package main

import (
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/status"
)

var planFleet = filepath.Join("..", "..", "internal", "status", "plan", "testdata", "plan", "fleet")

func TestRun_PlanCluster_RendersTheDeployment(t *testing.T) {
	g := NewWithT(t)
	table := runAs("polykube-status", "plan", "-f", planFleet, "--cluster", "alpha")
	g.Expect(table.code).To(Equal(status.ExitOK), table.stderr)
	g.Expect(table.stdout).To(MatchRegexp(`checkout\s+shop\s+MultiCloudWeighted\s+3\s+9\s+eu-mirror\s+api=mirror.eu.example/checkout:2.4.0\s`))

	yaml := runAs("polykube-status", "plan", "-f", planFleet, "--cluster", "gamma", "-o", "yaml")
	g.Expect(yaml.code).To(Equal(status.ExitOK), yaml.stderr)
	g.Expect(yaml.stdout).To(And(ContainSubstring("kind: Deployment"), ContainSubstring("- onprem-memory"),
		ContainSubstring("polykube.kismet.io/cluster: gamma"), ContainSubstring("memory: 2Gi")))
}

func TestRun_PlanAssumeDown(t *testing.T) {
	g := NewWithT(t)
	res := runAs("polykube-status", "plan", "-f", planFleet, "--assume-down", "gamma")
	g.Expect(res.code).To(Equal(status.ExitOK), res.stderr)
	g.Expect(res.stdout).To(MatchRegexp(`checkout\s+shop\s+MultiCloudWeighted\s+3\+2\s+3\+1\s+down\s+9\s+absorbs 3 of 3 \(maxSurge 100%\)`))
	g.Expect(res.stdout).To(MatchRegexp(`reports\s+shop\s+Static\s+-\s+2\s+down\s+3\s+no failover: 1 lost`))

	both := runAs("polykube-status", "plan", "-f", planFleet, "--assume-down", "gamma", "--assume-down", "alpha", "--cluster", "beta", "-o", "json")
	g.Expect(both.code).To(Equal(status.ExitOK), both.stderr)
	g.Expect(both.stdout).To(ContainSubstring(`"assumeDown": [
    "alpha",
    "gamma"
  ]`))
}

func TestRun_PlanAssumeDown_UsageErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"unknown cluster", []string{"plan", "-f", planFleet, "--assume-down", "delta"}, "--assume-down delta: no Workload read targets it"},
		{"cluster assumed down", []string{"plan", "-f", planFleet, "--cluster", "beta", "--assume-down", "beta"}, "--cluster beta is also --assume-down"},
		{"with diff", []string{"plan", "--diff", planFleet, planFleet, "--assume-down", "beta"}, "no -f, --cluster or --assume-down"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res := runAs("polykube-status", tt.args...)
			g.Expect(res.code).To(Equal(status.ExitUsage), res.stderr)
			g.Expect(res.stderr).To(And(ContainSubstring(tt.want), ContainSubstring("Run 'polykube-status plan --help' for usage.")))
			g.Expect(res.stdout).To(BeEmpty())
		})
	}
}
