package testbed

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/ports"
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
		p, err := ports.Free(2)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		runCtx, cancelRun := context.WithTimeout(ctx, time.Minute)
		defer cancelRun()
		cmd := exec.CommandContext(runCtx, tb.state.Operator.Binary, "--cluster-name="+other,
			fmt.Sprintf("--metrics-bind-address=127.0.0.1:%d", p[0]), fmt.Sprintf("--health-probe-bind-address=127.0.0.1:%d", p[1]))
		cmd.Env = append(os.Environ(), "KUBECONFIG="+tb.OperatorKubeconfig(c))
		out, err := cmd.CombinedOutput()
		var exit *exec.ExitError
		g.Expect(errors.As(err, &exit)).To(gomega.BeTrue(), "the operator started as %s in %s must refuse to run: %v\n%s", other, c, err, out)

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
}
