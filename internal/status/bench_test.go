package status_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// BenchmarkStatus measures the wall time of one status call (resolve the contexts, query them
// all, merge, print) against real API servers. `make bench` runs it. It reports figures and
// asserts none: the goals are ≤ timeout + 1 s with a dead context among ten, and ≤ 1 s for three
// healthy contexts.
func BenchmarkStatus(b *testing.B) {
	ctx := context.Background()
	names := []string{"alpha", "beta", "gamma"}
	f := fleettest.Start(b, names...)
	b.Cleanup(f.Stop)
	f.Namespace(ctx, b, "bench")
	for _, c := range f.Clusters {
		c.CreateFederation(ctx, b, "fleet", names...)
		for i := range 10 {
			c.CreateWorkload(ctx, b, fleettest.Weighted("bench", fmt.Sprintf("svc-%02d", i), int32(3+i), names...), nil)
		}
	}
	// Ten contexts: three per API server, and one dead.
	var ten []string
	for i := range 9 {
		c := f.Clusters[i%3]
		name := fmt.Sprintf("%s-%d", c.Context, i/3)
		f.AddContext(name, c.Env.Config)
		ten = append(ten, name)
	}
	f.AddContext("dead-closed-port", &rest.Config{Host: "https://" + closedPort(b)})
	f.AddContext("dead-hung", &rest.Config{Host: "https://" + hangingListener(b)})
	kc := f.Kubeconfig(b)

	timeout := status.DefaultTimeout
	cases := []struct {
		name     string
		contexts []string
		goal     time.Duration
	}{
		{"3-healthy", []string{"ctx-alpha", "ctx-beta", "ctx-gamma"}, time.Second},
		{"10-contexts-1-dead-closed-port", append(append([]string(nil), ten...), "dead-closed-port"), timeout + time.Second},
		{"10-contexts-1-dead-hung", append(append([]string(nil), ten...), "dead-hung"), timeout + time.Second},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			var worst time.Duration
			start := time.Now()
			for b.Loop() {
				t0 := time.Now()
				code := statusCall(ctx, b, kc, tc.contexts, timeout)
				worst = max(worst, time.Since(t0))
				if code == status.ExitInternal || code == status.ExitUsage {
					b.Fatalf("status call failed with exit %d", code)
				}
			}
			per := time.Since(start) / time.Duration(b.N)
			b.ReportMetric(per.Seconds(), "wall-s/op")
			b.ReportMetric(worst.Seconds(), "worst-wall-s")
			b.ReportMetric(timeout.Seconds(), "timeout-s")
			b.ReportMetric(tc.goal.Seconds(), "goal-s")
			b.Logf("%s: %d contexts, wall %s per call (worst %s), timeout %s, goal ≤ %s",
				tc.name, len(tc.contexts), per.Round(time.Millisecond), worst.Round(time.Millisecond), timeout, tc.goal)
		})
	}
}

// statusCall does what `polykube-status --context … -A` does, printing to nowhere.
func statusCall(ctx context.Context, b *testing.B, kubeconfig string, contexts []string, timeout time.Duration) int {
	targets, err := status.ResolveTargets(status.ContextSelection{Kubeconfig: kubeconfig, Contexts: contexts})
	if err != nil {
		b.Fatal(err)
	}
	q := status.Query{Timeout: timeout}
	r := status.Merge(status.Collect(ctx, targets, q, nil), q)
	if err := status.PrintReport(io.Discard, r, status.FormatTable, status.ViewWorkloads, status.PrintOptions{}); err != nil {
		b.Fatal(err)
	}
	return r.Summary.ExitCode
}

// hangingListener accepts TCP connections and never answers: a cluster that is down in the
// worst way, costing the full timeout.
func hangingListener(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan struct{})
	var conns []net.Conn
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	b.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

// closedPort is a loopback address nothing listens on.
func closedPort(b *testing.B) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
