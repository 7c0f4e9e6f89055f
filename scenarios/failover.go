package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func failoverSteps(r *registry) {
	r.step(`^the Workload "([^"]*)" fails over after (\d+s) and gives back after (\d+s), with at most (\d+%?) extra replicas per cluster$`, step4(func(s *harness.Scenario, ctx context.Context, name, detect, ret, surge string) error {
		d, err := time.ParseDuration(detect)
		if err != nil {
			return err
		}
		rt, err := time.ParseDuration(ret)
		if err != nil {
			return err
		}
		return s.SetFailover(name, d, rt, surge)
	}))
	r.step(`^the Workload "([^"]*)" fails over and gives back after the tier's blip window, with at most (\d+%?) extra replicas per cluster$`, step2(func(s *harness.Scenario, ctx context.Context, name, surge string) error {
		w := s.BlipWindow()
		godog.Logf(ctx, "the blip window of this tier: detectAfter = returnAfter = %s", w)
		return s.SetFailover(name, w, w, surge)
	}))
	r.step(`^once "([^"]*)" has been gone from the mesh for detectAfter, the replicas of "([^"]*)" are:$`, step3(func(s *harness.Scenario, ctx context.Context, cluster, workload string, table *godog.Table) error {
		want, err := replicaTable(table)
		if err != nil {
			return err
		}
		return s.AwaitAbsorbed(ctx, cluster, workload, want)
	}))
	r.step(`^once "([^"]*)" has served its share again for returnAfter, the replicas of "([^"]*)" are:$`, step3(func(s *harness.Scenario, ctx context.Context, cluster, workload string, table *godog.Table) error {
		want, err := replicaTable(table)
		if err != nil {
			return err
		}
		return s.AwaitReturned(ctx, cluster, workload, want)
	}))
	r.step(`^the failover status of "([^"]*)" is:$`, step2(func(s *harness.Scenario, ctx context.Context, workload string, table *godog.Table) error {
		rows, err := tableRows(table, "cluster", "base", "extra", "absorbs")
		if err != nil {
			return err
		}
		var want []harness.FailoverRow
		for _, row := range rows {
			fr := harness.FailoverRow{Cluster: row["cluster"], Absorbs: map[string]int32{}}
			for _, f := range []struct {
				cell string
				to   *int32
			}{{row["base"], &fr.Base}, {row["extra"], &fr.Extra}} {
				n, err := strconv.ParseInt(f.cell, 10, 32)
				if err != nil {
					return fmt.Errorf("cluster %s: %q is not a whole number", fr.Cluster, f.cell)
				}
				*f.to = int32(n)
			}
			if fr.Absorbs, err = sharesCell("absorbs", row["absorbs"]); err != nil {
				return fmt.Errorf("cluster %s: %w", fr.Cluster, err)
			}
			// The pending column is optional: without it, a change the operator waits
			// to make is not looked at.
			if cell, ok := row["pending"]; ok {
				if fr.Pending, err = sharesCell("pending", cell); err != nil {
					return fmt.Errorf("cluster %s: %w", fr.Cluster, err)
				}
			}
			want = append(want, fr)
		}
		return s.AwaitFailoverStatus(ctx, workload, want)
	}))
	r.step(`^the clusters other than "([^"]*)" see it missing (\d+) replicas of "([^"]*)" and wait$`, step3((*harness.Scenario).AwaitPending))
	r.step(`^the replicas of "([^"]*)" stay as they are for its returnAfter$`, step1((*harness.Scenario).HoldReplicasFor))
	r.step(`^the report gives how long the failover of "([^"]*)" away from "([^"]*)" took$`, func(ctx context.Context, workload, cluster string) (context.Context, error) {
		s, err := scenario(ctx)
		if err != nil {
			return ctx, err
		}
		figures, err := s.Figures(cluster, workload)
		if err != nil {
			return ctx, err
		}
		fmt.Print(figures)
		godog.Logf(ctx, "%s", figures)
		return godog.Attach(ctx, godog.Attachment{FileName: "figures.txt", MediaType: "text/plain", Body: []byte(figures)}), nil
	})
}

// replicaTable parses a | cluster | replicas | table.
func replicaTable(table *godog.Table) (map[string]int32, error) {
	rows, err := tableRows(table, "cluster", "replicas")
	if err != nil {
		return nil, err
	}
	want := map[string]int32{}
	for _, row := range rows {
		n, err := strconv.ParseInt(row["replicas"], 10, 32)
		if err != nil {
			return nil, fmt.Errorf("replicas of %s %q is not a whole number", row["cluster"], row["replicas"])
		}
		want[row["cluster"]] = int32(n)
	}
	return want, nil
}

// sharesCell parses a cell of replicas per peer, "alpha: 6, beta: 1", of the column named;
// "-" is nothing.
func sharesCell(column, cell string) (map[string]int32, error) {
	out := map[string]int32{}
	if cell == "" || cell == "-" {
		return out, nil
	}
	for _, part := range strings.Split(cell, ",") {
		name, n, ok := strings.Cut(part, ":")
		v, err := strconv.ParseInt(strings.TrimSpace(n), 10, 32)
		if !ok || err != nil {
			return nil, fmt.Errorf("%s %q: want \"cluster: replicas, …\" or -", column, cell)
		}
		out[strings.TrimSpace(name)] = int32(v)
	}
	return out, nil
}
