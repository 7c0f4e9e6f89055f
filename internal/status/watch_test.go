package status_test

import (
	"context"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// syncBuffer is a bytes buffer the watches may write to while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestWatch_RedrawsOnChangeInACluster runs Watch against a real API server and a dead context:
// a status change in the live cluster is drawn again, while the dead one is marked unreachable
// and its watches are retried.
func TestWatch_RedrawsOnChangeInACluster(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := fleettest.Start(t, "alpha")
	t.Cleanup(f.Stop)
	alpha := f.Cluster("alpha")
	f.Namespace(ctx, t, "shop")
	alpha.CreateWorkload(ctx, t, fleettest.Weighted("shop", "web", 2, "alpha"), nil)
	f.AddContext("dead", &rest.Config{Host: "https://" + deadAddr(t)})
	kc := f.Kubeconfig(t)

	targets, err := status.ResolveTargets(status.ContextSelection{Kubeconfig: kc, Contexts: []string{"ctx-alpha", "dead"}})
	g.Expect(err).NotTo(HaveOccurred())
	q := status.Query{Namespace: "shop", Timeout: 2 * time.Second}
	read := func(ctx context.Context) status.Report {
		return status.Merge(status.Collect(ctx, targets, q, nil), q)
	}
	drawn := make(chan status.Report, 16)
	progress := &syncBuffer{}
	wctx, cancel := context.WithCancel(ctx)
	done := make(chan status.Report, 1)
	go func() {
		last, err := status.Watch(wctx, targets, q, read, status.WatchOptions{
			Draw:     func(r status.Report) error { drawn <- r; return nil },
			Progress: progress, RetryMin: 100 * time.Millisecond, RetryMax: 400 * time.Millisecond,
		})
		if err != nil {
			t.Errorf("Watch: %v", err)
		}
		done <- last
	}()

	var first status.Report
	g.Eventually(drawn).WithTimeout(30 * time.Second).Should(Receive(&first))
	g.Expect(first.Clusters[0].Reachable).To(BeTrue())
	g.Expect(first.Clusters[1].Reason).To(Equal(status.ReasonUnreachable), "the dead context is marked")
	g.Expect(first.Workloads[0].Clusters[0].Ready).To(Equal(int32(2)))
	g.Eventually(progress.String).WithTimeout(10 * time.Second).Should(ContainSubstring("context dead: watch workloads.polykube.kismet.io failed (Unreachable)"))

	// The operator reports the slice rolling out: one ready of two.
	var w polykubev1alpha1.Workload
	g.Expect(alpha.Admin.Get(ctx, types.NamespacedName{Namespace: "shop", Name: "web"}, &w)).To(Succeed())
	w.Status.ReadyReplicas, w.Status.Phase = 1, polykubev1alpha1.PhaseProgressing
	g.Expect(alpha.Admin.Status().Update(ctx, &w)).To(Succeed())

	g.Eventually(func() int32 {
		select {
		case r := <-drawn:
			return r.Workloads[0].Clusters[0].Ready
		default:
			return -1
		}
	}).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).Should(Equal(int32(1)), "the change in alpha is drawn")

	cancel()
	var last status.Report
	g.Eventually(done).WithTimeout(10 * time.Second).Should(Receive(&last))
	g.Expect(last.Workloads[0].Clusters[0].Ready).To(Equal(int32(1)))
	g.Expect(last.Summary.ExitCode).To(Equal(status.ExitUnreachable), "the last exit code stands")
}

// TestWatch_NoChangeNoRead: with watches that report nothing, Watch reads once and never again:
// it does not poll.
func TestWatch_NoChangeNoRead(t *testing.T) {
	g := NewWithT(t)
	targets := []status.Target{{Context: "quiet", Config: &rest.Config{Host: "https://127.0.0.1:1"}}}
	q := status.Query{Timeout: time.Second}
	var mu sync.Mutex
	reads := 0
	read := func(context.Context) status.Report {
		mu.Lock()
		defer mu.Unlock()
		reads++
		return status.Report{Summary: status.Summary{ExitCode: reads}}
	}
	fakes := make(chan *watch.FakeWatcher, 16)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	drawn := make(chan status.Report, 4)
	go func() {
		_, _ = status.Watch(ctx, targets, q, read, status.WatchOptions{
			Draw:       func(r status.Report) error { drawn <- r; return nil },
			NewWatcher: func(status.Target) (status.Watcher, error) { return fakeWatcher{fakes}, nil },
		})
	}()
	g.Eventually(drawn).Should(Receive())
	// Six kinds, one watch each.
	var all []*watch.FakeWatcher
	g.Eventually(func() int {
		for {
			select {
			case fw := <-fakes:
				all = append(all, fw)
			default:
				return len(all)
			}
		}
	}).Should(Equal(6))
	g.Consistently(drawn, 2*status.DefaultSettle*3).ShouldNot(Receive(), "nothing changed, nothing is read")
	mu.Lock()
	g.Expect(reads).To(Equal(1))
	mu.Unlock()
	all[0].Modify(&polykubev1alpha1.Workload{})
	g.Eventually(drawn).WithTimeout(5*time.Second).Should(Receive(), "an event is followed by a read and a drawing")
}

// fakeWatcher hands out fake watches and tells the test about each.
type fakeWatcher struct{ opened chan *watch.FakeWatcher }

func (f fakeWatcher) Watch(context.Context, client.ObjectList, ...client.ListOption) (watch.Interface, error) {
	fw := watch.NewFake()
	f.opened <- fw
	return fw, nil
}

func deadAddr(tb testing.TB) string {
	tb.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := l.Addr().String()
	_ = l.Close()
	return addr
}
