package scenarios

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/cucumber/godog"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/scenarios/internal/harness"
)

func newFederation() harness.Conditioned { return &polykubev1alpha1.Federation{} }

func federationSteps(r *registry) {
	r.step(`^a federation of these clusters:$`, step1(func(s *harness.Scenario, ctx context.Context, table *godog.Table) error {
		rows, err := tableRows(table, "cluster", "cluster ID", "pod CIDR")
		if err != nil {
			return err
		}
		var members []harness.Member
		var names []string
		for _, row := range rows {
			id, err := strconv.ParseInt(row["cluster ID"], 10, 32)
			if err != nil {
				return fmt.Errorf("cluster ID of %s %q is not a number", row["cluster"], row["cluster ID"])
			}
			members = append(members, harness.Member{Name: row["cluster"], ClusterID: int32(id), PodCIDR: row["pod CIDR"]})
			names = append(names, row["cluster"])
		}
		if err := harness.CheckClusters(s.Fed, names); err != nil {
			return err
		}
		return s.CheckRoster(ctx, members)
	}))
	r.step(`^every operator reports the Federation "([^"]*)" as (Ready|not Ready)$`, step2(func(s *harness.Scenario, ctx context.Context, name, ready string) error {
		status := metav1.ConditionTrue
		if ready == "not Ready" {
			status = metav1.ConditionFalse
		}
		return s.AwaitConditions(ctx, s.Fed.Clusters(), newFederation, name,
			harness.Condition{Type: polykubev1alpha1.ReadyCondition, Status: status})
	}))
	r.step(`^every operator reports the Federation "([^"]*)" with these checks True: (.+)$`, step2(func(s *harness.Scenario, ctx context.Context, name, checks string) error {
		var want []harness.Condition
		for _, c := range strings.Split(checks, ",") {
			want = append(want, harness.Condition{Type: strings.TrimSpace(c), Status: metav1.ConditionTrue})
		}
		return s.AwaitConditions(ctx, s.Fed.Clusters(), newFederation, name, want...)
	}))
	r.step(`^every operator reports on the Federation "([^"]*)" that (\w+) is False with reason (\w+), naming (.+)$`, step4(func(s *harness.Scenario, ctx context.Context, name, condition, reason, named string) error {
		names, err := quotedList(named)
		if err != nil {
			return err
		}
		return s.AwaitConditions(ctx, s.Fed.Clusters(), newFederation, name,
			harness.Condition{Type: condition, Status: metav1.ConditionFalse, Reason: reason, MessageNames: names})
	}))
}
