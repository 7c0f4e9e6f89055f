// Package promserver runs the toolchain's Prometheus as a test-bed process and reads its HTTP
// API: the series a query returns, the alerts that fire, and the metric names a query reads as
// Prometheus's own parser sees them (/api/v1/parse_query), so that checks of PromQL use the
// parser of the Prometheus that will run it rather than a copy linked into Polykube (whose
// module would pull the whole repository onto newer Kubernetes libraries).
package promserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
)

// Options say how to run one Prometheus.
type Options struct {
	// Name is the process name in Procs (one per cluster in a test bed).
	Name string
	// Binary is the prometheus binary (toolchain.Prometheus).
	Binary string
	// Procs holds the process files; DataDir the configuration and the TSDB.
	Procs   proc.Dir
	DataDir string
	// Config is prometheus.yml; empty means a Prometheus that scrapes nothing.
	Config []byte
	// Rules are rule files (name -> content) written beside the configuration, which must list
	// them under rule_files.
	Rules map[string][]byte
	// Port is its loopback port; 0 takes a free one.
	Port int
	// Ready bounds the wait for /-/ready.
	Ready topology.Wait
}

// Server is a running Prometheus.
type Server struct {
	// URL is its base URL on loopback, http://127.0.0.1:PORT.
	URL   string
	name  string
	procs proc.Dir
	hc    *http.Client
}

// Start writes the configuration and starts Prometheus on a free loopback port, then waits
// until it answers ready.
func Start(ctx context.Context, o Options) (*Server, error) {
	if err := os.MkdirAll(o.DataDir, 0o755); err != nil {
		return nil, err
	}
	cfg := o.Config
	if len(cfg) == 0 {
		cfg = []byte("global: {}\n")
	}
	cfgPath := filepath.Join(o.DataDir, "prometheus.yml")
	if err := os.WriteFile(cfgPath, cfg, 0o644); err != nil {
		return nil, err
	}
	for name, data := range o.Rules {
		if err := os.WriteFile(filepath.Join(o.DataDir, name), data, 0o644); err != nil {
			return nil, err
		}
	}
	port := o.Port
	if port == 0 {
		p, err := ports.Free(1)
		if err != nil {
			return nil, err
		}
		port = p[0]
	}
	s := Connect(fmt.Sprintf("http://127.0.0.1:%d", port))
	s.name, s.procs = o.Name, o.Procs
	if _, err := o.Procs.Start(proc.Spec{
		Name: o.Name, Path: o.Binary, Dir: o.DataDir,
		Args: []string{
			"--config.file=" + cfgPath,
			"--storage.tsdb.path=" + filepath.Join(o.DataDir, "data"),
			fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port),
			// Rule files and the configuration are rewritten by the test bed: POST /-/reload.
			"--web.enable-lifecycle",
			"--log.level=warn",
		},
		HealthURL: s.URL + "/-/ready",
	}); err != nil {
		return nil, err
	}
	if err := o.Procs.AwaitHealthy(ctx, o.Name, "Prometheus "+o.Name+" to be ready at "+s.URL, o.Ready); err != nil {
		return nil, err
	}
	return s, nil
}

// Connect returns a client of a Prometheus already running at url (Stop does nothing).
func Connect(url string) *Server {
	return &Server{URL: url, hc: &http.Client{Timeout: 10 * time.Second}}
}

// Reload makes Prometheus read its configuration and rule files again.
func (s *Server) Reload(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.URL+"/-/reload", nil)
	if err != nil {
		return err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return fmt.Errorf("reload Prometheus at %s: %s: %s", s.URL, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// Stop stops the process.
func (s *Server) Stop(ctx context.Context, w topology.Wait) error {
	if s.name == "" {
		return nil
	}
	return s.procs.Stop(ctx, s.name, false, w)
}

// apiResponse is the envelope of every /api/v1 answer.
type apiResponse struct {
	Status    string          `json:"status"`
	Data      json.RawMessage `json:"data"`
	ErrorType string          `json:"errorType"`
	Error     string          `json:"error"`
}

// get calls an /api/v1 endpoint with form values and returns its data.
func (s *Server) get(ctx context.Context, path string, form url.Values) (json.RawMessage, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+path+"?"+form.Encode(), nil)
	if err != nil {
		return nil, err
	}
	resp, err := s.hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	var r apiResponse
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, fmt.Errorf("%s answered %s: %s", path, resp.Status, strings.TrimSpace(string(body)))
	}
	if r.Status != "success" {
		return nil, fmt.Errorf("%s: %s: %s", path, r.ErrorType, r.Error)
	}
	return r.Data, nil
}

// MetricNames parses query with Prometheus's parser and returns the metric names its
// selectors read, sorted and unique. A selector without a metric name (only label matchers)
// is an error: nothing could say which metric it reads.
func (s *Server) MetricNames(ctx context.Context, query string) ([]string, error) {
	data, err := s.get(ctx, "/api/v1/parse_query", url.Values{"query": {query}})
	if err != nil {
		return nil, fmt.Errorf("parse %q: %w", query, err)
	}
	var ast any
	if err := json.Unmarshal(data, &ast); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	var errs []error
	var walk func(n any)
	walk = func(n any) {
		switch v := n.(type) {
		case map[string]any:
			// Prometheus writes a range selector flat, its name beside its range.
			if v["type"] == "vectorSelector" || v["type"] == "matrixSelector" {
				name, _ := v["name"].(string)
				if name == "" {
					errs = append(errs, fmt.Errorf("%q has a selector without a metric name", query))
				}
				names[name] = true
			}
			for _, c := range v {
				walk(c)
			}
		case []any:
			for _, c := range v {
				walk(c)
			}
		}
	}
	walk(ast)
	out := make([]string, 0, len(names))
	for n := range names {
		if n != "" {
			out = append(out, n)
		}
	}
	sort.Strings(out)
	return out, errors.Join(errs...)
}

// Sample is one series of an instant query's result.
type Sample struct {
	Metric map[string]string `json:"metric"`
	Value  [2]any            `json:"value"`
}

// Query runs an instant query now and returns its series (a vector result; a scalar is one
// series without labels).
func (s *Server) Query(ctx context.Context, query string) ([]Sample, error) {
	data, err := s.get(ctx, "/api/v1/query", url.Values{"query": {query}})
	if err != nil {
		return nil, fmt.Errorf("query %q: %w", query, err)
	}
	var r struct {
		ResultType string          `json:"resultType"`
		Result     json.RawMessage `json:"result"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, err
	}
	switch r.ResultType {
	case "vector":
		var out []Sample
		return out, json.Unmarshal(r.Result, &out)
	case "scalar":
		var v [2]any
		if err := json.Unmarshal(r.Result, &v); err != nil {
			return nil, err
		}
		return []Sample{{Value: v}}, nil
	default:
		return nil, fmt.Errorf("query %q returned a %s, not a vector", query, r.ResultType)
	}
}

// Alert is one alert of /api/v1/alerts.
type Alert struct {
	Labels      map[string]string `json:"labels"`
	Annotations map[string]string `json:"annotations"`
	// State is pending or firing.
	State string `json:"state"`
}

// Alerts returns the pending and firing alerts.
func (s *Server) Alerts(ctx context.Context) ([]Alert, error) {
	data, err := s.get(ctx, "/api/v1/alerts", nil)
	if err != nil {
		return nil, err
	}
	var r struct {
		Alerts []Alert `json:"alerts"`
	}
	return r.Alerts, json.Unmarshal(data, &r)
}

// RulesFile turns a PrometheusRule manifest into the Prometheus rules file the Prometheus
// Operator would hand Prometheus: its spec.groups, as they are.
func RulesFile(prometheusRule []byte) ([]byte, error) {
	var rule struct {
		Kind string `json:"kind"`
		Spec struct {
			Groups []any `json:"groups"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(prometheusRule, &rule); err != nil {
		return nil, fmt.Errorf("read the PrometheusRule: %w", err)
	}
	if rule.Kind != "PrometheusRule" {
		return nil, fmt.Errorf("want a PrometheusRule, got kind %q", rule.Kind)
	}
	if len(rule.Spec.Groups) == 0 {
		return nil, errors.New("the PrometheusRule has no rule groups")
	}
	return yaml.Marshal(map[string]any{"groups": rule.Spec.Groups})
}

// CapFor returns the rules file with every alert's `for` longer than max set to max. The test
// bed uses it to render the shipped alert expressions with a `for` a scenario can wait out
// (PolykubeFailoverActiveTooLong waits 30 minutes in production); the expressions, labels and
// annotations are left as they are.
func CapFor(rulesFile []byte, max time.Duration) ([]byte, error) {
	var file struct {
		Groups []map[string]any `json:"groups"`
	}
	if err := yaml.Unmarshal(rulesFile, &file); err != nil {
		return nil, fmt.Errorf("read the rules file: %w", err)
	}
	for _, g := range file.Groups {
		rules, _ := g["rules"].([]any)
		for _, r := range rules {
			rule, ok := r.(map[string]any)
			if !ok {
				continue
			}
			f, ok := rule["for"].(string)
			if !ok {
				continue
			}
			d, err := time.ParseDuration(f)
			if err != nil {
				return nil, fmt.Errorf("alert %v: for %q is not a duration the test bed can shorten (write it in s, m or h): %w", rule["alert"], f, err)
			}
			if d > max {
				rule["for"] = max.String()
			}
		}
	}
	return yaml.Marshal(file)
}
