package promserver

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"sigs.k8s.io/yaml"
)

func TestRulesFile(t *testing.T) {
	g := NewWithT(t)
	out, err := RulesFile([]byte(`apiVersion: monitoring.coreos.com/v1
kind: PrometheusRule
metadata: {name: x}
spec:
  groups:
    - name: g
      rules:
        - alert: A
          expr: up == 0
          for: 1m
`))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(string(out)).To(Equal("groups:\n- name: g\n  rules:\n  - alert: A\n    expr: up == 0\n    for: 1m\n"))

	_, err = RulesFile([]byte("kind: ConfigMap\n"))
	g.Expect(err).To(MatchError(ContainSubstring(`want a PrometheusRule, got kind "ConfigMap"`)))
	_, err = RulesFile([]byte("kind: PrometheusRule\nspec: {}\n"))
	g.Expect(err).To(MatchError(ContainSubstring("no rule groups")))
}

// parseQueryServer answers /api/v1/parse_query with a fixed AST, as Prometheus 3.16 writes it.
func parseQueryServer(t *testing.T, ast string) *Server {
	t.Helper()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/api/v1/parse_query" || r.URL.Query().Get("query") == "" {
			http.Error(w, `{"status":"error","errorType":"bad_data","error":"unexpected request"}`, http.StatusBadRequest)
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":` + ast + `}`))
	}))
	t.Cleanup(ts.Close)
	return &Server{URL: ts.URL, hc: ts.Client()}
}

func TestMetricNames(t *testing.T) {
	g := NewWithT(t)
	// histogram_quantile(0.99, sum by (le) (rate(b_bucket[5m]))) / on() group_left a
	srv := parseQueryServer(t, `{"type":"binaryExpr","op":"/",
	  "lhs":{"type":"call","func":{"name":"histogram_quantile"},"args":[{"type":"numberLiteral","val":"0.99"},
	    {"type":"aggregation","op":"sum","grouping":["le"],"expr":{"type":"call","func":{"name":"rate"},
	      "args":[{"type":"matrixSelector","name":"b_bucket","range":300000,"matchers":[{"type":"=","name":"__name__","value":"b_bucket"}]}]}}]},
	  "rhs":{"type":"vectorSelector","name":"a","matchers":[]}}`)
	names, err := srv.MetricNames(context.Background(), "q")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(names).To(Equal([]string{"a", "b_bucket"}))

	// {job="x"}: a selector by labels only.
	srv = parseQueryServer(t, `{"type":"vectorSelector","name":"","matchers":[{"type":"=","name":"job","value":"x"}]}`)
	_, err = srv.MetricNames(context.Background(), `{job="x"}`)
	g.Expect(err).To(MatchError(ContainSubstring("selector without a metric name")))
}

func TestMetricNames_ParseError(t *testing.T) {
	g := NewWithT(t)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"status":"error","errorType":"bad_data","error":"invalid parameter \"query\": 1:5: parse error: unexpected \")\""}`))
	}))
	defer ts.Close()
	srv := &Server{URL: ts.URL, hc: ts.Client()}
	_, err := srv.MetricNames(context.Background(), "sum())")
	g.Expect(err).To(HaveOccurred())
	g.Expect(strings.Contains(err.Error(), `parse "sum())"`) && strings.Contains(err.Error(), "parse error")).To(BeTrue(), err.Error())
}

// The test bed may shorten an alert's `for` so that a scenario waits it out; shorter ones stay,
// and the rest of each rule is left as it is.
func TestCapFor(t *testing.T) {
	g := NewWithT(t)
	in := []byte(`groups:
  - name: g
    rules:
      - alert: Long
        expr: up == 0
        for: 30m
        labels: {severity: warning}
      - alert: Short
        expr: up == 0
        for: 5s
      - alert: Immediate
        expr: up == 0
      - record: job:up
        expr: sum(up)
`)
	out, err := CapFor(in, 20*time.Second)
	g.Expect(err).NotTo(HaveOccurred())
	var got struct {
		Groups []struct {
			Rules []map[string]any `json:"rules"`
		} `json:"groups"`
	}
	g.Expect(yaml.Unmarshal(out, &got)).To(Succeed())
	rules := got.Groups[0].Rules
	g.Expect(rules).To(HaveLen(4))
	g.Expect(rules[0]).To(And(HaveKeyWithValue("for", "20s"), HaveKeyWithValue("expr", "up == 0"), HaveKey("labels")))
	g.Expect(rules[1]).To(HaveKeyWithValue("for", "5s"))
	g.Expect(rules[2]).NotTo(HaveKey("for"))
	g.Expect(rules[3]).NotTo(HaveKey("for"))

	_, err = CapFor([]byte("groups:\n  - name: g\n    rules:\n      - alert: A\n        expr: up\n        for: 1d\n"), time.Minute)
	g.Expect(err).To(MatchError(ContainSubstring(`alert A: for "1d"`)))
}
