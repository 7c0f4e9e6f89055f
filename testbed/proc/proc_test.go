package proc

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/topology"
)

func TestDir_StartStopRestart(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	d := Dir(t.TempDir())
	w := topology.Wait{Timeout: topology.Duration{Duration: 10 * time.Second}, Interval: topology.Duration{Duration: 20 * time.Millisecond}}

	pid, err := d.Start(Spec{Name: "sleeper", Path: "/bin/sh", Args: []string{"-c", "echo hello $GREETING; exec sleep 60"}, Env: []string{"GREETING=world"}})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() { _ = d.Stop(ctx, "sleeper", true, w) })
	got, ok := d.Running("sleeper")
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(got).To(gomega.Equal(pid))

	again, err := d.Start(Spec{Name: "sleeper", Path: "/bin/false"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(again).To(gomega.Equal(pid), "a running process is left alone")
	g.Expect(d.Names()).To(gomega.Equal([]string{"sleeper"}))

	logged := func(n int) func() bool {
		return func() bool {
			b, _ := os.ReadFile(d.LogPath("sleeper"))
			return strings.Count(string(b), "hello world") == n
		}
	}
	// Stop only once the first process has written its line: on a loaded machine the shell
	// may not have run yet, and the restart check below counts both lines.
	g.Eventually(logged(1), w.Timeout.Duration, w.Interval.Duration).Should(gomega.BeTrue(), "the first process to log its line")
	g.Expect(d.Stop(ctx, "sleeper", false, w)).To(gomega.Succeed())
	_, ok = d.Running("sleeper")
	g.Expect(ok).To(gomega.BeFalse())

	pid2, err := d.Restart("sleeper")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(pid2).NotTo(gomega.Equal(pid))
	g.Eventually(logged(2), w.Timeout.Duration, w.Interval.Duration).Should(gomega.BeTrue(), "the restarted process to log its line")
	g.Expect(d.StopAll(ctx, w)).To(gomega.Succeed())
	_, ok = d.Running("sleeper")
	g.Expect(ok).To(gomega.BeFalse())
}

func TestDir_RecycledPIDIsNotAlive(t *testing.T) {
	g := gomega.NewWithT(t)
	d := Dir(t.TempDir())
	// Our own PID with a wrong start time stands for a PID that was reused.
	g.Expect(os.WriteFile(d.pidPath("ghost"), []byte(`{"pid":`+strconv.Itoa(os.Getpid())+`,"startTicks":1}`), 0o644)).To(gomega.Succeed())
	_, ok := d.Running("ghost")
	g.Expect(ok).To(gomega.BeFalse())
}

func TestDir_AwaitHealthy(t *testing.T) {
	g := gomega.NewWithT(t)
	ctx := context.Background()
	d := Dir(t.TempDir())
	w := topology.Wait{Timeout: topology.Duration{Duration: 20 * time.Second}, Interval: topology.Duration{Duration: 20 * time.Millisecond}}

	srv := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {}))
	t.Cleanup(srv.Close)
	_, err := d.Start(Spec{Name: "healthy", Path: "/bin/sh", Args: []string{"-c", "exec sleep 60"}, HealthURL: srv.URL})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() { _ = d.Stop(ctx, "healthy", true, w) })
	g.Expect(d.AwaitHealthy(ctx, "healthy", "the healthy process", w)).To(gomega.Succeed())

	// A process that dies before it is healthy ends the wait long before its timeout, and the
	// error carries its last words.
	_, err = d.Start(Spec{Name: "dies", Path: "/bin/sh", Args: []string{"-c", "echo cannot bind the port; exit 3"}, HealthURL: "http://127.0.0.1:1/"})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	start := time.Now()
	err = d.AwaitHealthy(ctx, "dies", "the dying process", w)
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("cannot bind the port")))
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("dies exited")))
	g.Expect(time.Since(start)).To(gomega.BeNumerically("<", w.Timeout.Duration/2))

	g.Expect(d.AwaitHealthy(ctx, "never-started", "x", w)).To(gomega.MatchError(gomega.ContainSubstring("never started")))
}
