package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cucumber/godog"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// Steps of features/per-cluster-overrides.feature and features/target-selection.feature: one
// manifest for every cluster, differing per cluster by overrides, and targets chosen by the
// roster's labels.
func overrideSteps(r *registry) {
	selected := func(ctx context.Context, name, strategy string, total *int32, table *godog.Table) error {
		return with(ctx, func(s *harness.Scenario) error {
			rows, err := tableRows(table, "labels")
			if err != nil {
				return err
			}
			var rules []harness.SelectorRule
			for _, row := range rows {
				labels, err := harness.ParseLabels(row["labels"])
				if err != nil {
					return err
				}
				rule := harness.SelectorRule{Labels: labels}
				if rule.Replicas, err = optInt32(row["replicas"], "replicas of "+row["labels"]); err != nil {
					return err
				}
				if rule.Weight, err = optInt32(row["weight"], "weight of "+row["labels"]); err != nil {
					return err
				}
				rules = append(rules, rule)
			}
			s.DefineSelectedWorkload(name, strategy, total, rules)
			return nil
		})
	}
	r.step(`^a Workload "([^"]*)" with strategy (Static|MultiCloudWeighted) and (\d+) replicas in total, targeting the clusters labelled:$`, func(ctx context.Context, name, strategy string, total int32, table *godog.Table) error {
		return selected(ctx, name, strategy, &total, table)
	})
	r.step(`^the Workload "([^"]*)" has the override:$`, step2(func(s *harness.Scenario, ctx context.Context, name string, doc *godog.DocString) error {
		return s.AddOverride(name, doc.Content)
	}))
	r.step(`^in cluster "([^"]*)" the container "([^"]*)" of "([^"]*)" runs its image from the registry "([^"]*)"$`, step4(func(s *harness.Scenario, ctx context.Context, cluster, container, name, registry string) error {
		return s.AwaitContainerImage(ctx, cluster, name, container, registry)
	}))
	r.step(`^in clusters? (.+) the container "([^"]*)" of "([^"]*)" runs its image as written$`, step3(func(s *harness.Scenario, ctx context.Context, list, container, name string) error {
		clusters, err := quotedList(list)
		if err != nil {
			return err
		}
		for _, cl := range clusters {
			if err := s.AwaitContainerImage(ctx, cl, name, container, ""); err != nil {
				return err
			}
		}
		return nil
	}))
	r.step(`^the Workload "([^"]*)" reports these overrides applied:$`, step2(func(s *harness.Scenario, ctx context.Context, name string, table *godog.Table) error {
		rows, err := tableRows(table, "cluster", "overrides")
		if err != nil {
			return err
		}
		want := map[string][]string{}
		for _, row := range rows {
			var names []string
			for _, n := range strings.Split(row["overrides"], ",") {
				if n = strings.TrimSpace(n); n != "" && n != "-" {
					names = append(names, n)
				}
			}
			want[row["cluster"]] = names
		}
		return s.AwaitAppliedOverrides(ctx, name, want)
	}))
	r.step(`^the roster in Git labels cluster "([^"]*)" with (.+)$`, step2(func(s *harness.Scenario, ctx context.Context, cluster, labels string) error {
		set, err := harness.ParseLabels(strings.Trim(labels, `"`))
		if err != nil {
			return fmt.Errorf("the labels: %w", err)
		}
		return s.RelabelMember(ctx, cluster, set)
	}))
	r.step(`^no cluster's copy of the Workload "([^"]*)" was edited after it was created$`, step1((*harness.Scenario).CheckNotEdited))
}

// Steps of features/autoscaling.feature.
func autoscalingSteps(r *registry) {
	r.step(`^a Workload "([^"]*)" autoscaled between (\d+) and (\d+) replicas in total, targeting:$`, step4(func(s *harness.Scenario, ctx context.Context, name string, minimum, maximum int32, table *godog.Table) error {
		rows, err := tableRows(table, "cluster", "weight")
		if err != nil {
			return err
		}
		var targets []harness.Target
		for _, row := range rows {
			t := harness.Target{Cluster: row["cluster"]}
			if t.Weight, err = optInt32(row["weight"], "weight of "+t.Cluster); err != nil {
				return err
			}
			targets = append(targets, t)
		}
		s.DefineAutoscaledWorkload(name, minimum, maximum, targets)
		return nil
	}))
	r.step(`^the HPA of "([^"]*)" in each cluster scales between:$`, step2(func(s *harness.Scenario, ctx context.Context, name string, table *godog.Table) error {
		rows, err := tableRows(table, "cluster", "min", "max")
		if err != nil {
			return err
		}
		want := map[string]harness.Bounds{}
		for _, row := range rows {
			lo, err := strconv.ParseInt(row["min"], 10, 32)
			if err != nil {
				return fmt.Errorf("min of %s %q is not a number", row["cluster"], row["min"])
			}
			hi, err := strconv.ParseInt(row["max"], 10, 32)
			if err != nil {
				return fmt.Errorf("max of %s %q is not a number", row["cluster"], row["max"])
			}
			want[row["cluster"]] = harness.Bounds{Min: int32(lo), Max: int32(hi)}
		}
		return s.AwaitHPABounds(ctx, name, want)
	}))
	r.step(`^someone scales the Deployment of "([^"]*)" in cluster "([^"]*)" to (\d+) replicas by hand$`, step3((*harness.Scenario).ScaleByHand))
}
