package monitoring_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/promserver"
	"github.com/polykube/polykube/testbed/topology"
)

// Every panel's query parses with the parser of the pinned Prometheus (its /api/v1/parse_query)
// and evaluates; it reads only metrics docs/metrics.md documents; and every Polykube metric the
// docs list has a panel.
func TestDashboard_QueriesParseAndReadDocumentedMetrics(t *testing.T) {
	g := NewWithT(t)
	_, qs := readDashboard(t)
	docs := documentedMetrics(t)
	g.Expect(docs).To(ContainElement("polykube_workload_ready_replicas"), "the metric names of docs/metrics.md were not found")

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	procs := proc.Dir(filepath.Join(dir, "procs"))
	srv, err := promserver.Start(ctx, promserver.Options{
		Name: "prometheus", Binary: tool(t, toolchain.Prometheus), Procs: procs, DataDir: filepath.Join(dir, "prometheus"),
		Ready: topology.Wait{Timeout: topology.Duration{Duration: time.Minute}, Interval: topology.Duration{Duration: 200 * time.Millisecond}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() {
		_ = srv.Stop(context.Background(), topology.Wait{Timeout: topology.Duration{Duration: 30 * time.Second}})
	})

	read := map[string]bool{}
	for _, q := range qs {
		names, err := srv.MetricNames(ctx, q.expr)
		g.Expect(err).NotTo(HaveOccurred(), "panel %q query %s", q.panel, q.refID)
		g.Expect(names).NotTo(BeEmpty(), "panel %q query %s reads no metric", q.panel, q.refID)
		for _, n := range names {
			g.Expect(documented(docs, n)).To(BeTrue(), "panel %q query %s reads %s, which docs/metrics.md does not document", q.panel, q.refID, n)
			read[n] = true
		}
		_, err = srv.Query(ctx, q.expr)
		g.Expect(err).NotTo(HaveOccurred(), "panel %q query %s does not evaluate", q.panel, q.refID)
	}
	for _, n := range docs {
		if strings.HasPrefix(n, "polykube_") {
			g.Expect(read).To(HaveKey(n), "docs/metrics.md documents %s, but no dashboard panel shows it", n)
		}
	}
}
