package metrics

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
)

// Every metric the package registers is listed in docs/metrics.md with its labels, and the
// document lists no polykube_ metric that does not exist (the alert rules are checked against
// the same document in gitops/monitoring).
func TestEveryMetricIsDocumented(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	doc := string(raw)
	registered := map[string]bool{}
	ch := make(chan *prometheus.Desc, 64)
	for _, c := range []prometheus.Collector{WorkloadDesiredReplicas, WorkloadReadyReplicas, ReconcileErrors, StatusWrites, DriftReverted, fleet} {
		c.Describe(ch)
	}
	close(ch)
	descRe := regexp.MustCompile(`fqName: "([^"]+)".*variableLabels: \{([^}]*)\}`)
	for d := range ch {
		m := descRe.FindStringSubmatch(d.String())
		if m == nil {
			t.Fatalf("cannot read the name of %s", d)
		}
		name := m[1]
		registered[name] = true
		row := ""
		for _, line := range strings.Split(doc, "\n") {
			if strings.HasPrefix(line, "| `"+name+"` |") {
				row = line
			}
		}
		if row == "" {
			t.Errorf("docs/metrics.md has no table row for %s", name)
			continue
		}
		for _, l := range strings.Split(m[2], ",") {
			if l = strings.TrimSpace(l); l != "" && !strings.Contains(row, "`"+l+"`") {
				t.Errorf("docs/metrics.md does not list label %s of %s", l, name)
			}
		}
	}
	for _, name := range regexp.MustCompile("`(polykube_[a-z_]+)`").FindAllStringSubmatch(doc, -1) {
		if !registered[name[1]] {
			t.Errorf("docs/metrics.md lists %s, which the operator does not serve", name[1])
		}
	}
}
