package scenarios

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/scenarios/internal/harness"
)

// exitNames are the words the features use for polykube-status exit codes.
var exitNames = map[string]int{
	"healthy":      status.ExitOK,
	"unreachable":  status.ExitUnreachable,
	"disagreement": status.ExitDisagreement,
	"not ready":    status.ExitNotReady,
	"failing":      status.ExitFailing,
}

func statusSteps(r *registry) {
	r.step(`^I run polykube-status against every cluster(?: with output (table|json|yaml))?$`, step1(func(s *harness.Scenario, ctx context.Context, format string) error {
		if format == "" {
			format = status.FormatTable
		}
		_, err := s.RunStatus(ctx, format)
		return err
	}))
	r.step(`^it shows for "([^"]*)" the desired and ready replicas of each cluster:$`, step2(func(s *harness.Scenario, ctx context.Context, name string, table *godog.Table) error {
		rows, err := tableRows(table, "cluster", "desired", "ready")
		if err != nil {
			return err
		}
		return s.AwaitStatus(ctx, fmt.Sprintf("the desired and ready replicas of %q", name), func(run *harness.StatusRun) error {
			for _, row := range rows {
				cell, err := workloadCell(run.Report, name, row["cluster"])
				if err != nil {
					return err
				}
				if got := fmt.Sprintf("%d/%d", cell.Desired, cell.Ready); got != row["desired"]+"/"+row["ready"] {
					return fmt.Errorf("cluster %q desired/ready %s, want %s/%s", row["cluster"], got, row["desired"], row["ready"])
				}
			}
			return nil
		})
	}))
	r.step(`^it exits with code (\d+) \((healthy|unreachable|disagreement|not ready|failing)\)$`, step2(func(s *harness.Scenario, ctx context.Context, code int, meaning string) error {
		if exitNames[meaning] != code {
			return fmt.Errorf("the feature says %d means %q, but polykube-status uses %d for it", code, meaning, exitNames[meaning])
		}
		return s.AwaitStatus(ctx, fmt.Sprintf("exit code %d", code), func(run *harness.StatusRun) error {
			if run.ExitCode != code {
				return fmt.Errorf("exit code %d (%s); summary %+v", run.ExitCode, status.ExitMeaning(run.ExitCode), run.Report.Summary)
			}
			return nil
		})
	}))
	r.step(`^the output is a JSON document of kind "([^"]*)"$`, step1(func(s *harness.Scenario, ctx context.Context, kind string) error {
		doc, err := jsonOutput(s)
		if err != nil {
			return err
		}
		if doc["kind"] != kind || doc["apiVersion"] != status.APIVersion {
			return fmt.Errorf("the JSON has apiVersion %v and kind %v, want %s and %s", doc["apiVersion"], doc["kind"], status.APIVersion, kind)
		}
		return nil
	}))
	r.step(`^the JSON reports for "([^"]*)" in cluster "([^"]*)" desired (\d+) and ready (\d+)$`, step4(func(s *harness.Scenario, ctx context.Context, name, cluster string, desired, ready int32) error {
		return s.AwaitStatus(ctx, fmt.Sprintf("%q in cluster %q with desired %d and ready %d in its JSON", name, cluster, desired, ready), func(run *harness.StatusRun) error {
			// Read the printed JSON back, as a script would, rather than the Report it came from.
			var rep status.Report
			if err := json.Unmarshal([]byte(run.Output), &rep); err != nil {
				return fmt.Errorf("the output is not a FleetStatus JSON document: %w", err)
			}
			cell, err := workloadCell(rep, name, cluster)
			if err != nil {
				return err
			}
			if cell.Desired != desired || cell.Ready != ready {
				return fmt.Errorf("desired %d ready %d", cell.Desired, cell.Ready)
			}
			return nil
		})
	}))
	r.step(`^the JSON summary says every cluster was reachable and the fleet is healthy$`, step0(func(s *harness.Scenario, ctx context.Context) error {
		return s.AwaitStatus(ctx, "a healthy summary with every cluster reachable", func(run *harness.StatusRun) error {
			doc, err := jsonOutput(s)
			if err != nil {
				return err
			}
			raw, _ := json.Marshal(doc["summary"])
			var sum status.Summary
			if err := json.Unmarshal(raw, &sum); err != nil {
				return fmt.Errorf("summary: %w", err)
			}
			n := len(s.Fed.Clusters())
			if sum.ClustersQueried != n || sum.ClustersReachable != n || !sum.Healthy || sum.ExitCode != status.ExitOK {
				return fmt.Errorf("summary %s", raw)
			}
			return nil
		})
	}))
	r.step(`^(it|polykube-status) marks cluster "([^"]*)" unreachable and no other cluster$`, step2(func(s *harness.Scenario, ctx context.Context, who, cluster string) error {
		if who == "polykube-status" {
			if _, err := s.RunStatus(ctx, status.FormatTable); err != nil {
				return err
			}
		}
		return s.AwaitStatus(ctx, fmt.Sprintf("cluster %q, and only it, unreachable", cluster), func(run *harness.StatusRun) error {
			var unreachable []string
			for _, c := range run.Report.Clusters {
				if !c.Reachable {
					unreachable = append(unreachable, c.Context)
				}
			}
			if !slices.Equal(unreachable, []string{cluster}) || !slices.Equal(run.Report.Summary.Unreachable, []string{cluster}) {
				return fmt.Errorf("unreachable clusters %v, summary.unreachable %v", unreachable, run.Report.Summary.Unreachable)
			}
			return nil
		})
	}))
}

// workloadCell finds one cluster's entry of a Workload in a report.
func workloadCell(rep status.Report, name, cluster string) (*status.WorkloadInCluster, error) {
	for _, w := range rep.Workloads {
		if w.Name != name {
			continue
		}
		for i, c := range w.Clusters {
			if c.Cluster == cluster || c.Context == cluster {
				return &w.Clusters[i], nil
			}
		}
		return nil, fmt.Errorf("the %q row has no cluster %q", name, cluster)
	}
	return nil, fmt.Errorf("no Workload %q in the report (%d workloads)", name, len(rep.Workloads))
}

// jsonOutput decodes the last polykube-status output, which must have been JSON.
func jsonOutput(s *harness.Scenario) (map[string]any, error) {
	if s.Status == nil || s.Status.Format != status.FormatJSON {
		return nil, errors.New("polykube-status was not run with output json in this scenario")
	}
	var doc map[string]any
	if err := json.Unmarshal([]byte(s.Status.Output), &doc); err != nil {
		return nil, fmt.Errorf("the output is not JSON: %w\n%s", err, strconv.Quote(s.Status.Output))
	}
	return doc, nil
}
