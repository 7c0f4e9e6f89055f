// Package harness is what the scenario steps stand on: the suite's configuration and waits,
// the shared federation the test bed brings up, and small helpers over its clusters that the
// test bed does not offer (yet). Steps stay thin; anything with logic lives here.
package harness

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/testbed/topology"
)

// Names of the waits in config.yaml. Every wait a step makes is one of these.
const (
	WaitBringUp     = "bring-up"
	WaitScenario    = "scenario"
	WaitDelivery    = "delivery"
	WaitConverge    = "converge"
	WaitFault       = "fault"
	WaitHold        = "hold"
	WaitStatus      = "status"
	WaitCleanup     = "cleanup"
	WaitDiagnostics = "diagnostics"
	WaitAlert       = "alert"
)

// ScaleEnv multiplies every timeout (not the intervals) by a factor, for slow machines.
const ScaleEnv = "POLYKUBE_SCENARIO_TIMEOUT_SCALE"

var waitNames = []string{WaitBringUp, WaitScenario, WaitDelivery, WaitConverge, WaitFault, WaitHold, WaitStatus, WaitCleanup, WaitDiagnostics, WaitAlert}

// Config is scenarios/config.yaml.
type Config struct {
	// Topology is the test-bed topology file, relative to the config file.
	Topology string `json:"topology"`
	// StatusReader is the kustomization that ships polykube-status's read-only ClusterRole
	// (gitops/status-reader), relative to the config file. The harness installs it in every
	// cluster as a user would (`kubectl apply -k`) and reads with an identity bound to it.
	StatusReader string `json:"statusReader"`
	// Dashboard is the Grafana dashboard Polykube ships (gitops/monitoring/dashboard.json),
	// relative to the config file; a scenario runs each panel's query against the test bed's
	// Prometheus.
	Dashboard string `json:"dashboard"`
	// Waits holds every wait by name; all of waitNames must be present.
	Waits map[string]topology.Wait `json:"waits"`
}

// LoadConfig reads and checks the suite configuration, applying $POLYKUBE_SCENARIO_TIMEOUT_SCALE.
// It needs no cluster.
func LoadConfig(path string) (*Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read scenario config: %w", err)
	}
	var c Config
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		return nil, fmt.Errorf("parse scenario config %s: %w", path, err)
	}
	var problems []string
	for _, n := range waitNames {
		w, ok := c.Waits[n]
		if !ok {
			problems = append(problems, fmt.Sprintf("waits.%s is missing", n))
			continue
		}
		if w.Timeout.Duration <= 0 {
			problems = append(problems, fmt.Sprintf("waits.%s.timeout must be positive", n))
		}
	}
	for n := range c.Waits {
		if !slices.Contains(waitNames, n) {
			problems = append(problems, fmt.Sprintf("waits.%s is not a wait the suite knows; use one of %s", n, strings.Join(waitNames, ", ")))
		}
	}
	if c.Topology == "" {
		problems = append(problems, "topology: name the test-bed topology file")
	} else if !filepath.IsAbs(c.Topology) {
		c.Topology = filepath.Join(filepath.Dir(path), c.Topology)
	}
	if c.StatusReader == "" {
		problems = append(problems, "statusReader: name the kustomization of the status-reader ClusterRole (gitops/status-reader)")
	} else if !filepath.IsAbs(c.StatusReader) {
		c.StatusReader = filepath.Join(filepath.Dir(path), c.StatusReader)
	}
	if c.Dashboard == "" {
		problems = append(problems, "dashboard: name the Grafana dashboard file (gitops/monitoring/dashboard.json)")
	} else if !filepath.IsAbs(c.Dashboard) {
		c.Dashboard = filepath.Join(filepath.Dir(path), c.Dashboard)
	}
	if len(problems) > 0 {
		sort.Strings(problems)
		return nil, fmt.Errorf("scenario config %s: %s", path, strings.Join(problems, "; "))
	}
	if s := os.Getenv(ScaleEnv); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			return nil, fmt.Errorf("$%s=%q: want a positive number such as 2", ScaleEnv, s)
		}
		for n, w := range c.Waits {
			w.Timeout.Duration = time.Duration(float64(w.Timeout.Duration) * f)
			c.Waits[n] = w
		}
	}
	return &c, nil
}

// Wait returns the named wait. An unknown name is a programming error in a step.
func (c *Config) Wait(name string) topology.Wait {
	w, ok := c.Waits[name]
	if !ok {
		panic(fmt.Sprintf("scenario wait %q is not in config.yaml", name))
	}
	if w.Interval.Duration <= 0 {
		w.Interval.Duration = 500 * time.Millisecond
	}
	return w
}
