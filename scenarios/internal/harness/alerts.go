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
// whose labels include every label given, in the cluster's Prometheus.
func (sc *Scenario) alertState(ctx context.Context, cluster, alert string, labels map[string]string) (string, error) {
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
		if a.Labels["alertname"] != alert || !hasLabels(a.Labels, labels) {
			continue
		}
		if a.State == "firing" || state == "" {
			state = a.State
		}
	}
	return state, nil
}

func hasLabels(have, want map[string]string) bool {
	for k, v := range want {
		if have[k] != v {
			return false
		}
	}
	return true
}

// WorkloadAlert names an alert about a Workload of the scenario (the labels of
// PolykubeFailoverActiveTooLong).
func (sc *Scenario) WorkloadAlert(workload string) (about string, labels map[string]string) {
	return fmt.Sprintf("for %q", workload), map[string]string{"namespace": sc.Namespace, "workload": workload}
}

// MemberAlert names an alert about a ClusterMember (the label of PolykubeIdentityRefused).
func MemberAlert(member string) (about string, labels map[string]string) {
	return fmt.Sprintf("for the ClusterMember %q", member), map[string]string{"clustermember": member}
}

// alertName is the alert's name and what it is about ("" for an alert of the whole cluster).
func alertName(alert, about string) string {
	if about == "" {
		return alert
	}
	return alert + " " + about
}

// AwaitAlert waits until, in each named cluster's Prometheus, the alert with the labels is
// firing (firing true) or is neither pending nor firing (firing false). about names what the
// labels select, for the messages; no labels select every alert of that name.
func (sc *Scenario) AwaitAlert(ctx context.Context, clusters []string, alert, about string, labels map[string]string, firing bool) error {
	want := "firing"
	if !firing {
		want = "neither pending nor firing"
	}
	for _, cl := range clusters {
		if _, err := sc.prometheus(cl); err != nil {
			return err
		}
	}
	what := fmt.Sprintf("%s to be %s in the Prometheus of %s", alertName(alert, about), want, strings.Join(clusters, ", "))
	return Await(ctx, sc.Config.Wait(WaitAlert), what, func(ctx context.Context) error {
		var problems []string
		for _, cl := range clusters {
			state, err := sc.alertState(ctx, cl, alert, labels)
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

// CheckAlertInactive fails if the alert with the labels is pending or firing, now, in the
// Prometheus of any of the clusters: an alert that fires in one cluster must not fire in the
// others, whose operators act on their own view.
func (sc *Scenario) CheckAlertInactive(ctx context.Context, clusters []string, alert, about string, labels map[string]string) error {
	var active []string
	for _, cl := range clusters {
		state, err := sc.alertState(ctx, cl, alert, labels)
		if err != nil {
			return err
		}
		if state != "" {
			active = append(active, fmt.Sprintf("%s: %s", cl, state))
		}
	}
	if len(active) > 0 {
		return fmt.Errorf("%s must not be active in these clusters, but is (%s)", alertName(alert, about), strings.Join(active, "; "))
	}
	return nil
}
