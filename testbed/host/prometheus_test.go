package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/promserver"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// TestPrometheusAddon brings up two clusters with the prometheus add-on: each Prometheus
// scrapes its own operator over HTTPS with the metrics reader's token, and an operator started
// in a cluster as another member makes PolykubeIdentityRefused fire there (its `for` is a
// minute), and only there.
func TestPrometheusAddon(t *testing.T) {
	tc := requireTools(t, "kwok", "flux", "prometheus")
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	log := &syncBuffer{}
	tb := newTestbed(t, twoClusters(t, "git", "flux", "operator", "prometheus"), t.TempDir(), log, tc)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test-bed log:\n%s", log.String())
			for _, c := range tb.Topology().ClusterNames() {
				data, _ := os.ReadFile(tb.procs.LogPath(prometheusProc(c)))
				t.Logf("%s:\n%s", prometheusProc(c), data)
			}
		}
		g := gomega.NewWithT(t)
		g.Expect(tb.Down(context.Background())).To(gomega.Succeed())
		expectGone(g, tb.Dir())
	})
	g.Expect(tb.Up(ctx, UpOptions{})).To(gomega.Succeed(), log.String())
	g.Expect(log.String()).To(gomega.ContainSubstring("✓ Starting Prometheus"))

	waitFor := func(what string, timeout time.Duration, cond wait.Condition) error {
		return wait.For(ctx, topology.Wait{Timeout: topology.Duration{Duration: timeout}, Interval: topology.Duration{Duration: 2 * time.Second}}, what, cond)
	}
	prom := func(cluster string) *promserver.Server {
		p, err := tb.Prometheus(cluster)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return p
	}

	t.Run("each Prometheus scrapes its operator with the reader's token", func(t *testing.T) {
		g := gomega.NewWithT(t)
		for _, c := range tb.Topology().ClusterNames() {
			p := prom(c)
			g.Expect(waitFor("Prometheus of "+c+" to scrape its operator", 2*time.Minute, func(ctx context.Context) error {
				up, err := p.Query(ctx, `up{job="`+PrometheusJob+`"} == 1`)
				if err != nil {
					return err
				}
				if len(up) != 1 {
					return fmt.Errorf("up == 1 has %d series", len(up))
				}
				roster, err := p.Query(ctx, `polykube_roster_members`)
				if err != nil || len(roster) == 0 {
					return fmt.Errorf("no polykube_roster_members yet (%v)", err)
				}
				return nil
			})).To(gomega.Succeed())
		}
	})

	t.Run("an identity refusal fires PolykubeIdentityRefused in that cluster", func(t *testing.T) {
		g := gomega.NewWithT(t)
		const c, other = "aws-eu-central-1", "gcp-europe-west3"
		// Beside the running operator, as a second replica copied from the other cluster's
		// entry point would run: it refuses at start and marks the member's condition.
		out, err := tb.StartReplicaAs(ctx, c, other)
		g.Expect(err).NotTo(gomega.HaveOccurred(), "the operator started as %s beside the one of %s must refuse to run:\n%s", other, c, out)
		g.Expect(out).To(gomega.ContainSubstring("refuses to act as another member"))
		_, running := tb.procs.Running(operatorProc(c))
		g.Expect(running).To(gomega.BeTrue(), "the operator of %s must run on beside the refused replica", c)

		firing := func(p *promserver.Server) (bool, error) {
			alerts, err := p.Alerts(ctx)
			if err != nil {
				return false, err
			}
			for _, a := range alerts {
				if a.Labels["alertname"] == "PolykubeIdentityRefused" && a.State == "firing" && a.Labels["clustermember"] == c {
					return true, nil
				}
			}
			return false, nil
		}
		g.Expect(waitFor("PolykubeIdentityRefused to fire in "+c, 4*time.Minute, func(context.Context) error {
			ok, err := firing(prom(c))
			if err == nil && !ok {
				err = errors.New("not firing")
			}
			return err
		})).To(gomega.Succeed())
		ok, err := firing(prom(other))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(ok).To(gomega.BeFalse(), "the refusal in %s must not fire in %s", c, other)
	})

	t.Run("an operator run with leader election reports that it leads", func(t *testing.T) {
		g := gomega.NewWithT(t)
		const c = "gcp-europe-west3"
		g.Expect(tb.SetOperatorLeaderElection(ctx, c, true)).To(gomega.Succeed())
		g.Expect(tb.state.Clusters[c].Operator.LeaderElect).To(gomega.BeTrue(), "the run's state keeps the setting for the operator fault")
		p := prom(c)
		g.Expect(waitFor("the operator of "+c+" to report that it leads", 2*time.Minute, func(ctx context.Context) error {
			s, err := p.Query(ctx, `leader_election_master_status{job="`+PrometheusJob+`"} == 1`)
			if err == nil && len(s) != 1 {
				err = fmt.Errorf("leader_election_master_status == 1 has %d series", len(s))
			}
			return err
		})).To(gomega.Succeed())
		// Without it again, the process stopped gracefully (SIGTERM): it gave the Lease up.
		g.Expect(tb.SetOperatorLeaderElection(ctx, c, false)).To(gomega.Succeed())
		g.Expect(tb.state.Clusters[c].Operator.LeaderElect).To(gomega.BeFalse())
		cl, err := tb.Client(c)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		leases := &coordinationv1.LeaseList{}
		g.Expect(cl.List(ctx, leases, client.InNamespace(tb.state.Operator.ServiceAccount.Namespace))).To(gomega.Succeed())
		g.Expect(leases.Items).To(gomega.HaveLen(1), "the operator's leader election Lease")
		g.Expect(ptr.Deref(leases.Items[0].Spec.HolderIdentity, "")).To(gomega.BeEmpty(), "a leader stopped gracefully releases its Lease")
	})
}
