package scenarios

import (
	"context"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

// Steps of the alert scenarios (tagged @prometheus): the failover alert
// (features/capacity-failover.feature), the identity alert (features/nothing-lost.feature), the
// operator-down alert (features/failure-isolation.feature).
func alertSteps(r *registry) {
	r.step(`^the alert (\w+) fires for "([^"]*)" in clusters? (.+)$`, step3(func(s *harness.Scenario, ctx context.Context, alert, workload, list string) error {
		clusters, err := quotedList(list)
		if err != nil {
			return err
		}
		about, labels := s.WorkloadAlert(workload)
		return s.AwaitAlert(ctx, clusters, alert, about, labels, true)
	}))
	r.step(`^the alert (\w+) for "([^"]*)" is no longer active in any cluster$`, step2(func(s *harness.Scenario, ctx context.Context, alert, workload string) error {
		about, labels := s.WorkloadAlert(workload)
		return s.AwaitAlert(ctx, s.Fed.Clusters(), alert, about, labels, false)
	}))
	r.step(`^the alert (\w+) fires for the ClusterMember "([^"]*)" in cluster "([^"]*)" and in no other cluster$`, step3(func(s *harness.Scenario, ctx context.Context, alert, member, cluster string) error {
		about, labels := harness.MemberAlert(member)
		if err := s.AwaitAlert(ctx, []string{cluster}, alert, about, labels, true); err != nil {
			return err
		}
		return s.CheckAlertInactive(ctx, s.OtherClusters(cluster), alert, about, labels)
	}))
	r.step(`^the alert (\w+) for the ClusterMember "([^"]*)" is no longer active in any cluster$`, step2(func(s *harness.Scenario, ctx context.Context, alert, member string) error {
		about, labels := harness.MemberAlert(member)
		return s.AwaitAlert(ctx, s.Fed.Clusters(), alert, about, labels, false)
	}))
	r.step(`^the alert (\w+) fires in cluster "([^"]*)" and in no other cluster$`, step2(func(s *harness.Scenario, ctx context.Context, alert, cluster string) error {
		if err := s.AwaitAlert(ctx, []string{cluster}, alert, "", nil, true); err != nil {
			return err
		}
		return s.CheckAlertInactive(ctx, s.OtherClusters(cluster), alert, "", nil)
	}))
	r.step(`^the alert (\w+) is no longer active in any cluster$`, step1(func(s *harness.Scenario, ctx context.Context, alert string) error {
		return s.AwaitAlert(ctx, s.Fed.Clusters(), alert, "", nil, false)
	}))
}

// Steps of the dashboard scenario (features/capacity-failover.feature, tagged @prometheus).
func dashboardSteps(r *registry) {
	r.step(`^the operator of cluster "([^"]*)" runs with leader election, as gitops/operator runs it$`, step1((*harness.Scenario).RunOperatorWithLeaderElection))
	r.step(`^the operator of cluster "([^"]*)" holds a leader election Lease in "([^"]*)"$`, step2((*harness.Scenario).AwaitLeaseHeld))
	r.step(`^every panel of the dashboard shows a series from a cluster's Prometheus$`, step0((*harness.Scenario).AwaitDashboardSeries))
}
