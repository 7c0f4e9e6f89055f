package harness

import (
	"context"
	"fmt"
	"strings"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/promserver"
)

// prometheus returns the client of the cluster's Prometheus, or an error saying how to get one.
func (sc *Scenario) prometheus(cluster string) (*promserver.Server, error) {
	pb, ok := sc.Fed.Faults().(testbed.PrometheusAddon)
	if !ok {
		return nil, fmt.Errorf("the %s bed runs no Prometheus; tag the scenario @prometheus (the suite then brings the add-on up)", sc.Fed.Provider())
	}
	return pb.Prometheus(cluster)
}

// alertState returns the state (firing, pending, or "" when absent) of the alert of that name
// whose labels include the workload's namespace and name, in the cluster's Prometheus.
func (sc *Scenario) alertState(ctx context.Context, cluster, alert, workload string) (string, error) {
	p, err := sc.prometheus(cluster)
	if err != nil {
		return "", err
	}
	alerts, err := p.Alerts(ctx)
	if err != nil {
		return "", fmt.Errorf("read the alerts of cluster %q's Prometheus: %w", cluster, err)
	}
	state := ""
	for _, a := range alerts {
		if a.Labels["alertname"] == alert && a.Labels["namespace"] == sc.Namespace && a.Labels["workload"] == workload {
			if a.State == "firing" || state == "" {
				state = a.State
			}
		}
	}
	return state, nil
}

// AwaitAlert waits until, in each named cluster's Prometheus, the alert for the Workload is
// firing (firing true) or is neither pending nor firing (firing false).
func (sc *Scenario) AwaitAlert(ctx context.Context, clusters []string, alert, workload string, firing bool) error {
	want := "firing"
	if !firing {
		want = "neither pending nor firing"
	}
	for _, cl := range clusters {
		if _, err := sc.prometheus(cl); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("%s for %q to be %s in the Prometheus of %s", alert, workload, want, strings.Join(clusters, ", "))
	return Await(ctx, sc.Config.Wait(WaitAlert), what, func(ctx context.Context) error {
		var problems []string
		for _, cl := range clusters {
			state, err := sc.alertState(ctx, cl, alert, workload)
			if err != nil {
				return err
			}
			if (firing && state != "firing") || (!firing && state != "") {
				if state == "" {
					state = "not active"
				}
				problems = append(problems, fmt.Sprintf("%s: %s", cl, state))
			}
		}
		if len(problems) > 0 {
			return fmt.Errorf("%s", strings.Join(problems, "; "))
		}
		return nil
	})
}
