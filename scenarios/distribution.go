package scenarios

import (
	"context"
	"fmt"
	"strconv"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func distributionSteps(r *registry) {
	define := func(ctx context.Context, name, strategy string, total *int32, table *godog.Table) error {
		return with(ctx, func(s *harness.Scenario) error {
			rows, err := tableRows(table, "cluster")
			if err != nil {
				return err
			}
			var targets []harness.Target
			for _, row := range rows {
				t := harness.Target{Cluster: row["cluster"]}
				if t.Replicas, err = optInt32(row["replicas"], "replicas of "+t.Cluster); err != nil {
					return err
				}
				if t.Weight, err = optInt32(row["weight"], "weight of "+t.Cluster); err != nil {
					return err
				}
				targets = append(targets, t)
			}
			s.DefineWorkload(name, strategy, total, targets)
			return nil
		})
	}
	r.step(`^a Workload "([^"]*)" with strategy (Static|MultiCloudWeighted), targeting:$`, func(ctx context.Context, name, strategy string, table *godog.Table) error {
		return define(ctx, name, strategy, nil, table)
	})
	r.step(`^a Workload "([^"]*)" with strategy (Static|MultiCloudWeighted) and (\d+) replicas in total, targeting:$`, func(ctx context.Context, name, strategy string, total int32, table *godog.Table) error {
		return define(ctx, name, strategy, &total, table)
	})
	r.step(`^I commit to Git the Workload "([^"]*)" with (\d+) replicas in total$`, step2(func(s *harness.Scenario, ctx context.Context, name string, total int32) error {
		w, err := s.Workload(name)
		if err != nil {
			return err
		}
		w.Spec.Distribution.Replicas = &total
		return s.CommitWorkload(ctx, name)
	}))
	r.step(`^I commit to Git the Workload "([^"]*)" with cluster "([^"]*)" at (\d+) replicas?$`, step3(func(s *harness.Scenario, ctx context.Context, name, cluster string, replicas int32) error {
		w, err := s.Workload(name)
		if err != nil {
			return err
		}
		for i, t := range w.Spec.Distribution.Targets {
			if t.ClusterRef == cluster {
				w.Spec.Distribution.Targets[i].Replicas = &replicas
				return s.CommitWorkload(ctx, name)
			}
		}
		return fmt.Errorf("the Workload %q does not target cluster %q", name, cluster)
	}))
	r.step(`^I commit to Git the Workload "([^"]*)" with the weight of cluster "([^"]*)" at (\d+)$`, step3(func(s *harness.Scenario, ctx context.Context, name, cluster string, weight int32) error {
		w, err := s.Workload(name)
		if err != nil {
			return err
		}
		for i, t := range w.Spec.Distribution.Targets {
			if t.ClusterRef == cluster {
				w.Spec.Distribution.Targets[i].Weight = &weight
				return s.CommitWorkload(ctx, name)
			}
		}
		return fmt.Errorf("the Workload %q does not target cluster %q", name, cluster)
	}))
	r.step(`^the replicas of "([^"]*)" are:$`, step2(func(s *harness.Scenario, ctx context.Context, name string, table *godog.Table) error {
		rows, err := tableRows(table, "cluster", "replicas")
		if err != nil {
			return err
		}
		want := map[string]int32{}
		for _, row := range rows {
			n, err := strconv.ParseInt(row["replicas"], 10, 32)
			if err != nil {
				return fmt.Errorf("replicas of %s %q is not a whole number", row["cluster"], row["replicas"])
			}
			want[row["cluster"]] = int32(n)
		}
		return s.AwaitReplicas(ctx, name, want)
	}))
	r.step(`^the replicas of "([^"]*)" add up to (\d+)$`, step2((*harness.Scenario).AwaitTotal))
	r.step(`^every cluster computed the same allocation for "([^"]*)"$`, step1((*harness.Scenario).AwaitSameAllocation))
	r.step(`^no cluster runs fewer replicas of "([^"]*)" than before$`, do1((*harness.Scenario).CheckNeverLowered))
}
