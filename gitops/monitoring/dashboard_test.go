package monitoring_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// dashboard is the part of a Grafana dashboard the checks read.
type dashboard struct {
	UID    string  `json:"uid"`
	Title  string  `json:"title"`
	Panels []panel `json:"panels"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource struct {
		Type string `json:"type"`
		UID  string `json:"uid"`
	} `json:"datasource"`
	Targets []struct {
		RefID string `json:"refId"`
		Expr  string `json:"expr"`
	} `json:"targets"`
	// Panels are the panels of a row.
	Panels []panel `json:"panels"`
}

// query is one target of one panel.
type query struct{ panel, refID, expr string }

func readDashboard(t *testing.T) (dashboard, []query) {
	t.Helper()
	raw, err := os.ReadFile("dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard.json: %v", err)
	}
	var qs []query
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				qs = append(qs, query{p.Title, tg.RefID, tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(d.Panels)
	return d, qs
}

// documentedMetrics are the metric names docs/metrics.md writes in backquotes.
func documentedMetrics(t *testing.T) []string {
	t.Helper()
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "metrics.md"))
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range regexp.MustCompile("`([a-z][a-z0-9]*(?:_[a-z0-9]+)+)`").FindAllStringSubmatch(string(doc), -1) {
		names = append(names, m[1])
	}
	return names
}

// documented reports whether a metric name is in the docs, a histogram's series counting as
// their histogram.
func documented(docs []string, name string) bool {
	for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok && slices.Contains(docs, base) {
			return true
		}
	}
	return false
}

// The dashboard is well formed for Grafana: every panel has a title and queries of the
// dashboard's Prometheus data source, with distinct ids and refIds.
func TestDashboard_PanelsAreWellFormed(t *testing.T) {
	g := NewWithT(t)
	d, qs := readDashboard(t)
	g.Expect(d.UID).NotTo(BeEmpty())
	g.Expect(d.Title).NotTo(BeEmpty())
	g.Expect(qs).NotTo(BeEmpty())
	ids := map[int]bool{}
	for _, p := range d.Panels {
		g.Expect(p.Title).NotTo(BeEmpty(), "panel %d has no title", p.ID)
		g.Expect(ids[p.ID]).To(BeFalse(), "two panels have id %d", p.ID)
		ids[p.ID] = true
		g.Expect(p.Targets).NotTo(BeEmpty(), "panel %q has no query", p.Title)
		g.Expect(p.Datasource.Type).To(Equal("prometheus"), "panel %q", p.Title)
		g.Expect(p.Datasource.UID).To(Equal("${datasource}"), "panel %q must read the dashboard's data source variable", p.Title)
		refs := map[string]bool{}
		for _, tg := range p.Targets {
			g.Expect(tg.Expr).NotTo(BeEmpty(), "panel %q query %s is empty", p.Title, tg.RefID)
			g.Expect(refs[tg.RefID]).To(BeFalse(), "panel %q has two queries %s", p.Title, tg.RefID)
			refs[tg.RefID] = true
		}
	}
}

// Every Polykube metric docs/metrics.md documents appears in a panel's query (the test tagged
// prometheus checks it with Prometheus's parser; this one runs everywhere).
func TestDashboard_EveryPolykubeMetricHasAPanel(t *testing.T) {
	g := NewWithT(t)
	_, qs := readDashboard(t)
	var all strings.Builder
	for _, q := range qs {
		all.WriteString(q.expr + "\n")
	}
	n := 0
	for _, m := range documentedMetrics(t) {
		if strings.HasPrefix(m, "polykube_") {
			n++
			g.Expect(regexp.MustCompile(`\b`+m+`\b`).MatchString(all.String())).To(BeTrue(), "docs/metrics.md documents %s, but no dashboard panel shows it", m)
		}
	}
	g.Expect(n).To(BeNumerically(">=", 10), "the Polykube metrics of docs/metrics.md were not found")
}
