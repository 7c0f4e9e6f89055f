package monitoring_test

import (
	"context"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/toolchain"
)

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
