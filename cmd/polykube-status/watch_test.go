package main

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
)

type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRun_WatchEndsWithTheLastExitCode: --watch prints the report and keeps running; Ctrl-C
// (the context ending) ends it with the last report's exit code, not an error. The fake API
// server cannot serve watches: that is reported and retried, and the report still stands.
func TestRun_WatchEndsWithTheLastExitCode(t *testing.T) {
	g := NewWithT(t)
	alpha := fleettest.NewFakeCluster(t)
	w := fleettest.Weighted("shop", "web", 2, "alpha")
	w.Generation = 1
	alpha.Set("workloads", operatedWorkload(g, w, "alpha", startingUp))
	kc := fleettest.FakeKubeconfig(t, map[string]*fleettest.FakeCluster{"alpha": alpha})

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut lockedBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"polykube-status", "--kubeconfig", kc, "--context", "alpha", "-n", "shop", "--watch"}, &out, &errOut, func(string) string { return "" })
	}()
	g.Eventually(out.String).WithTimeout(30 * time.Second).Should(MatchRegexp(`web\s+shop\s+0/2 Progressing`))
	g.Consistently(done, 500*time.Millisecond).ShouldNot(Receive(), "--watch keeps running")
	cancel()
	var code int
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&code))
	g.Expect(code).To(Equal(status.ExitNotReady), "stderr: %s", errOut.String())
}

func TestRun_WatchUsage(t *testing.T) {
	g := NewWithT(t)
	kc := twoContexts(t)
	res := runAs("polykube-status", "--kubeconfig", kc, "--context", "alpha", "--watch", "--wait=1m")
	g.Expect(res.code).To(Equal(status.ExitUsage))
	g.Expect(res.stderr).To(ContainSubstring("--wait and --watch exclude each other"))
}

func TestRun_EventsUsage(t *testing.T) {
	g := NewWithT(t)
	kc := twoContexts(t)
	res := runAs("polykube-status", "events", "--kubeconfig", kc, "--context", "alpha", "--since=-1m")
	g.Expect(res.code).To(Equal(status.ExitUsage))
	g.Expect(res.stderr).To(ContainSubstring("--since must not be negative"))
	res = runAs("polykube-status", "events", "--kubeconfig", kc, "--context", "alpha", "--watch")
	g.Expect(res.code).To(Equal(status.ExitUsage))
	g.Expect(res.stderr).To(ContainSubstring("--wait and --watch apply to the fleet view only"))
}

func TestRun_BundleUsage(t *testing.T) {
	g := NewWithT(t)
	kc := twoContexts(t)
	res := runAs("polykube-status", "bundle", "--kubeconfig", kc, "--context", "alpha")
	g.Expect(res.code).To(Equal(status.ExitUsage))
	g.Expect(res.stderr).To(ContainSubstring("bundle needs the file to write: -o FILE.tar.gz"))
	res = runAs("polykube-status", "bundle", "--kubeconfig", kc, "--all-contexts", "-o", t.TempDir()+"/b.tar.gz")
	g.Expect(res.code).To(Equal(status.ExitUsage))
	g.Expect(res.stderr).To(ContainSubstring("bundle reads only contexts you name"))
	existing := t.TempDir() + "/b.tar.gz"
	g.Expect(os.WriteFile(existing, nil, 0o600)).To(Succeed())
	res = runAs("polykube-status", "bundle", "--kubeconfig", kc, "--context", "alpha", "-o", existing)
	g.Expect(res.code).To(Equal(status.ExitUsage))
	g.Expect(res.stderr).To(ContainSubstring("exists: remove it or choose another file"))
}
