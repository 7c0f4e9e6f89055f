package harness

import (
	"bytes"
	"context"
	"fmt"

	"github.com/polykube/polykube/internal/status"
)

// StatusRun is one run of polykube-status through its Go API, exactly as the CLI runs it:
// collect with read-only clients, merge, print.
type StatusRun struct {
	Format   string
	Report   status.Report
	Output   string
	ExitCode int
}

// RunStatus runs polykube-status against every cluster of the federation, one context per
// cluster named after it, with the status-reader identity, restricted to the scenario's
// namespace. format is table, json or yaml.
func (sc *Scenario) RunStatus(ctx context.Context, format string) (*StatusRun, error) {
	if err := status.ValidateFormat(format); err != nil {
		return nil, err
	}
	var targets []status.Target
	for _, cl := range sc.Fed.Clusters() {
		cfg, err := sc.ReaderConfig(ctx, cl)
		t := status.Target{Context: cl, Namespace: sc.Namespace, Config: cfg, ConfigErr: err}
		if cfg != nil {
			t.Server = cfg.Host
		}
		targets = append(targets, t)
	}
	q := status.Query{Namespace: sc.Namespace, Timeout: sc.Config.Wait(WaitStatus).Timeout.Duration}
	report := status.Read(ctx, targets, q, nil)
	var out bytes.Buffer
	if err := status.PrintReport(&out, report, format, status.ViewWorkloads, status.PrintOptions{}); err != nil {
		return nil, fmt.Errorf("print the polykube-status report as %s: %w", format, err)
	}
	run := &StatusRun{Format: format, Report: report, Output: out.String(), ExitCode: report.Summary.ExitCode}
	sc.Status = run
	return run, nil
}

// AwaitStatus re-runs polykube-status, in the format of the scenario's last run, until check
// accepts the run or the converge wait ends: operators write status asynchronously, so what
// polykube-status shows lags the Deployments by a reconcile.
func (sc *Scenario) AwaitStatus(ctx context.Context, what string, check func(*StatusRun) error) error {
	if sc.Status == nil {
		return fmt.Errorf("polykube-status has not been run in this scenario; add \"When I run polykube-status against every cluster\"")
	}
	format := sc.Status.Format
	first := true
	return Await(ctx, sc.Config.Wait(WaitConverge), "polykube-status to show "+what, func(ctx context.Context) error {
		run := sc.Status
		if !first {
			var err error
			if run, err = sc.RunStatus(ctx, format); err != nil {
				return err
			}
		}
		first = false
		return check(run)
	})
}
