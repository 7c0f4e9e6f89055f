package status

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// TestCollect_HungExecPlugin: client-go runs a context's exec credential plugin without any
// deadline, so a plugin that never answers must not hold the run past --timeout. Its context is
// a Timeout that names the plugin; the contexts beside it are read as usual.
func TestCollect_HungExecPlugin(t *testing.T) {
	g := NewWithT(t)
	srv := fleettest.EmptyListServer(t)
	dir := t.TempDir()
	kc := clientcmdapi.NewConfig()
	// https: clientcmd attaches credentials, exec plugins included, only to TLS servers.
	kc.Clusters["fleet"] = &clientcmdapi.Cluster{Server: srv.URL, CertificateAuthorityData: fleettest.ServerCA(srv)}
	kc.AuthInfos["token"] = &clientcmdapi.AuthInfo{Token: "static"}
	kc.AuthInfos["hung-plugin"] = &clientcmdapi.AuthInfo{Exec: fleettest.ExecStanza(fleettest.HangingPlugin(t, dir))}
	kc.AuthInfos["ok-plugin"] = &clientcmdapi.AuthInfo{Exec: fleettest.ExecStanza(fleettest.TokenPlugin(t, dir, "from-plugin"))}
	for _, n := range []string{"token", "hung-plugin", "ok-plugin"} {
		kc.Contexts[n] = &clientcmdapi.Context{Cluster: "fleet", AuthInfo: n}
	}
	kcPath := filepath.Join(dir, "kubeconfig")
	g.Expect(clientcmd.WriteToFile(*kc, kcPath)).To(Succeed())
	targets, err := ResolveTargets(ContextSelection{Kubeconfig: kcPath, Contexts: []string{"token", "hung-plugin", "ok-plugin"}})
	g.Expect(err).NotTo(HaveOccurred())

	timeout := time.Second
	start := time.Now()
	snaps := Collect(context.Background(), targets, Query{Timeout: timeout}, nil)
	elapsed := time.Since(start)

	// The plugin sleeps 60 s; 10 s is far above the timeout and far below the plugin.
	g.Expect(elapsed).To(BeNumerically("<", 10*time.Second), "a hung exec plugin must not hold the run past --timeout")
	g.Expect(snaps[0].Err).NotTo(HaveOccurred())
	g.Expect(snaps[2].Err).NotTo(HaveOccurred(), "an exec plugin that answers is unaffected")
	g.Expect(snaps[1].Reason).To(Equal(ReasonTimeout), "%v", snaps[1].Err)
	g.Expect(snaps[1].Err).To(MatchError(ErrExecPluginTimeout))
	g.Expect(snaps[1].Err).To(MatchError(context.DeadlineExceeded))

	row := Merge(snaps, Query{Timeout: timeout}).Clusters[1]
	g.Expect(row.Reachable).To(BeFalse())
	g.Expect(row.Message).To(And(ContainSubstring("exec credential plugin did not answer within --timeout (1s)"),
		ContainSubstring("hang.sh"), ContainSubstring("kubectl --context hung-plugin get --raw /version"), ContainSubstring("raise --timeout")))
	g.Expect(row.Message).NotTo(ContainSubstring("the API server did not answer"), "the API server was never asked")
}

// TestCollect_BoundedParallelism: Collect reads at most Query.Parallel clusters at once
// (DefaultParallel when unset), and does read that many at once.
func TestCollect_BoundedParallelism(t *testing.T) {
	for _, tt := range []struct {
		name     string
		parallel int
		want     int
	}{
		{"explicit", 3, 3},
		{"default", 0, DefaultParallel},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			const n = 20
			targets := make([]Target, n)
			for i := range targets {
				targets[i] = Target{Context: fmt.Sprintf("ctx-%02d", i)}
			}
			gate := newGatedReaders()
			done := make(chan []Snapshot, 1)
			go func() {
				done <- Collect(context.Background(), targets, Query{Timeout: time.Minute, Parallel: tt.parallel}, gate.factory)
			}()
			// Let the reads through one at a time: each time, exactly one more may start.
			for released := range n {
				g.Eventually(gate.started.Load, 10*time.Second).Should(BeEquivalentTo(min(released+tt.want, n)))
				gate.release <- struct{}{}
			}
			var snaps []Snapshot
			g.Eventually(done, 10*time.Second).Should(Receive(&snaps))
			for _, s := range snaps {
				g.Expect(s.Err).NotTo(HaveOccurred(), s.Context)
			}
			g.Expect(gate.maxInFlight()).To(Equal(tt.want))
		})
	}
}

// TestCollect_AbandonsReadThatIgnoresItsDeadline: a read stuck where its context does not reach
// is given up shortly after the deadline, without naming an exec plugin the context does not use.
func TestCollect_AbandonsReadThatIgnoresItsDeadline(t *testing.T) {
	g := NewWithT(t)
	stuck := make(chan struct{})
	defer close(stuck) // ends the abandoned read
	factory := func(Target, time.Duration) (Reader, error) { <-stuck; return nil, errors.New("unblocked") }

	start := time.Now()
	snaps := Collect(context.Background(), []Target{{Context: "stuck"}}, Query{Timeout: time.Second}, factory)
	g.Expect(time.Since(start)).To(BeNumerically("<", 10*time.Second))
	g.Expect(snaps[0].Reason).To(Equal(ReasonTimeout))
	g.Expect(snaps[0].Err).To(MatchError(ContainSubstring("did not return within --timeout (1s)")))
	g.Expect(snaps[0].Err).NotTo(MatchError(ErrExecPluginTimeout))
}

// gatedReaders is a ReaderFactory whose readers block in their Workload list until released,
// counting how many are blocked at once.
type gatedReaders struct {
	release chan struct{}
	started atomic.Int32

	mu                sync.Mutex
	inFlight, maxSeen int
}

func newGatedReaders() *gatedReaders { return &gatedReaders{release: make(chan struct{})} }

func (g *gatedReaders) factory(Target, time.Duration) (Reader, error) { return gatedReader{g}, nil }

func (g *gatedReaders) maxInFlight() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.maxSeen
}

type gatedReader struct{ g *gatedReaders }

func (r gatedReader) Get(context.Context, client.ObjectKey, client.Object, ...client.GetOption) error {
	return errors.New("not used")
}

func (r gatedReader) List(ctx context.Context, list client.ObjectList, _ ...client.ListOption) error {
	if _, ok := list.(*polykubev1alpha1.WorkloadList); !ok {
		return nil
	}
	g := r.g
	g.mu.Lock()
	g.inFlight++
	g.maxSeen = max(g.maxSeen, g.inFlight)
	g.mu.Unlock()
	g.started.Add(1)
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	select {
	case <-g.release:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
