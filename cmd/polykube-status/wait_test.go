package main

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// operatedWorkload is w in cluster with the status its operator writes; mutate changes it.
func operatedWorkload(g Gomega, w *polykubev1alpha1.Workload, cluster string, mutate func(*polykubev1alpha1.WorkloadStatus)) *polykubev1alpha1.Workload {
	out := w.DeepCopy()
	st, err := fleettest.StatusFor(out, cluster, nil)
	g.Expect(err).NotTo(HaveOccurred())
	if mutate != nil {
		mutate(&st)
	}
	out.Status = st
	return out
}

func startingUp(st *polykubev1alpha1.WorkloadStatus) {
	st.ReadyReplicas, st.Phase = 0, polykubev1alpha1.PhaseProgressing
}

// TestRun_WaitUntilReady: with --wait the CLI re-reads a fleet whose beta slice is starting
// and exits 0 with one report once it is ready; what it waited for went to stderr.
func TestRun_WaitUntilReady(t *testing.T) {
	g := NewWithT(t)
	alpha, beta := fleettest.NewFakeCluster(t), fleettest.NewFakeCluster(t)
	w := fleettest.Weighted("shop", "web", 4, "alpha", "beta")
	w.Generation = 1
	alpha.Set("workloads", operatedWorkload(g, w, "alpha", nil))
	beta.Set("workloads", operatedWorkload(g, w, "beta", startingUp))
	kc := fleettest.FakeKubeconfig(t, map[string]*fleettest.FakeCluster{"alpha": alpha, "beta": beta})

	done := make(chan result, 1)
	go func() {
		done <- runCLI("--kubeconfig", kc, "--context", "alpha", "--context", "beta", "-n", "shop", "--wait=1m", "-o", "json")
	}()
	g.Eventually(beta.WorkloadLists).WithTimeout(30*time.Second).Should(BeNumerically(">=", 2), "it re-reads while beta is not ready")
	g.Expect(done).NotTo(Receive(), "it must not return while beta is not ready")
	beta.Set("workloads", operatedWorkload(g, w, "beta", nil))

	var res result
	g.Eventually(done).WithTimeout(30 * time.Second).Should(Receive(&res))
	g.Expect(res.code).To(Equal(status.ExitOK), "stdout: %s\nstderr: %s", res.stdout, res.stderr)
	g.Expect(res.stderr).To(MatchRegexp(`^polykube-status: waiting \(\d+s of 1m0s\): not ready: Workload shop/web\n$`))
	rep := res.report(g)
	g.Expect(rep.Summary.Healthy).To(BeTrue())
	g.Expect(rep.Workloads).To(HaveLen(1))
}

// TestRun_WaitGivesUp: at the timeout it prints the last report with that report's exit code.
func TestRun_WaitGivesUp(t *testing.T) {
	g := NewWithT(t)
	alpha := fleettest.NewFakeCluster(t)
	w := fleettest.Weighted("shop", "web", 2, "alpha")
	w.Generation = 1
	alpha.Set("workloads", operatedWorkload(g, w, "alpha", startingUp))
	kc := fleettest.FakeKubeconfig(t, map[string]*fleettest.FakeCluster{"alpha": alpha})

	res := runCLI("--kubeconfig", kc, "--context", "alpha", "-n", "shop", "--wait=2s")
	g.Expect(res.code).To(Equal(status.ExitNotReady), res.stderr)
	g.Expect(res.elapsed).To(BeNumerically("<", 10*time.Second))
	g.Expect(alpha.WorkloadLists()).To(BeNumerically(">=", 2))
	g.Expect(res.stderr).To(ContainSubstring("polykube-status: gave up waiting after 2s: something is not ready (exit 5)"))
	g.Expect(res.stdout).To(MatchRegexp(`web\s+shop\s+0/2 Progressing`))
}

func TestRun_WaitUsage(t *testing.T) {
	g := NewWithT(t)
	kc := twoContexts(t)
	res := runAs("polykube-status", "--kubeconfig", kc, "--context", "alpha", "--wait", "2m")
	g.Expect(res.code).To(Equal(status.ExitUsage))
	g.Expect(res.stderr).To(ContainSubstring(`"2m" was read as a Workload name; to wait that long write --wait=2m`))
}
