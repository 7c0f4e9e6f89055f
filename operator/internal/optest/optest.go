// Package optest runs the operator in-process against a real API server for integration tests
// and the benchmark: the same setup.New wiring as the binary, a log captured in memory, and a
// counter of the API requests the operator sends.
package optest

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"runtime/pprof"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap/zapcore"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/apicount"
	"github.com/polykube/polykube/operator/internal/rectest"
	"github.com/polykube/polykube/operator/internal/setup"
)

// Env is one real API server shared by the tests of a package, started on first use, with
// a client that knows the operator's scheme.
type Env struct {
	rectest.Env
	once   sync.Once
	client client.Client
	err    error
}

// Start returns the running API server and a client for it, starting it on the first call.
// It fails the test (never skips) when the API server cannot start.
func (e *Env) Start(tb testing.TB) (*rest.Config, client.Client) {
	tb.Helper()
	cfg := e.Env.Start(tb)
	e.once.Do(func() {
		scheme, err := setup.Scheme()
		if err != nil {
			e.err = err
			return
		}
		e.client, e.err = client.New(cfg, client.Options{Scheme: scheme})
	})
	if e.err != nil {
		tb.Fatalf("create a client for the test API server: %v", e.err)
	}
	return cfg, e.client
}

// Operator is a running in-process operator.
type Operator struct {
	// Writes counts the operator's API requests.
	Writes *apicount.Counter
	log    *syncBuffer
	// globalFrom is where this operator's share of the process-wide log starts.
	globalFrom int
	cancel     context.CancelFunc
	done       chan error
}

// Options tune StartOperator; the zero value is fine.
type Options struct {
	// SecretRecheckInterval defaults to 300ms so tests do not wait for the production 30s.
	SecretRecheckInterval time.Duration
	// MaxConcurrentReconciles defaults to 2.
	MaxConcurrentReconciles int
	// LogTo also receives the log (the log is always captured in memory).
	LogTo io.Writer
	// ProductionLogLevel logs at info level like the binary does by default, instead of at every
	// verbosity (which tests use to scan everything the operator could ever log).
	ProductionLogLevel bool
	// LeaderElect and LeaderElectionNamespace are passed on to setup.Options.
	LeaderElect             bool
	LeaderElectionNamespace string
	// WatchNamespaces is passed on to setup.Options (empty: every namespace).
	WatchNamespaces []string
	// MetricsBindAddress and HealthProbeBindAddress default to "0" (disabled).
	MetricsBindAddress, HealthProbeBindAddress string
}

// StartOperator starts the operator for clusterName and stops it when the test ends.
func StartOperator(tb testing.TB, cfg *rest.Config, clusterName string, opts Options) *Operator {
	tb.Helper()
	if opts.SecretRecheckInterval == 0 {
		opts.SecretRecheckInterval = 300 * time.Millisecond
	}
	if opts.MaxConcurrentReconciles == 0 {
		opts.MaxConcurrentReconciles = 2
	}
	globalLogOnce.Do(func() {
		// Framework code (informers, client-go) logs through the global logger; capture it
		// too, so that tests scanning the log scan everything the process wrote.
		ctrl.SetLogger(zap.New(zap.WriteTo(&globalLog), zap.Level(zapcore.Level(-10))))
	})
	o := &Operator{Writes: &apicount.Counter{}, log: &syncBuffer{}, done: make(chan error, 1), globalFrom: globalLog.Len()}
	var out io.Writer = o.log
	if opts.LogTo != nil {
		out = io.MultiWriter(o.log, opts.LogTo)
	}
	// Log at every verbosity, so that tests that scan the log for secrets scan all of it.
	level := zapcore.Level(-10)
	if opts.ProductionLogLevel {
		level = zapcore.InfoLevel
	}
	logger := zap.New(zap.WriteTo(out), zap.Level(level))
	mgr, err := setup.New(o.Writes.Wrap(cfg), setup.Options{
		ClusterName:                  clusterName,
		MetricsBindAddress:           orDefault(opts.MetricsBindAddress, "0"),
		HealthProbeBindAddress:       orDefault(opts.HealthProbeBindAddress, "0"),
		LeaderElect:                  opts.LeaderElect,
		LeaderElectionNamespace:      opts.LeaderElectionNamespace,
		WatchNamespaces:              opts.WatchNamespaces,
		SecretRecheckInterval:        opts.SecretRecheckInterval,
		MaxConcurrentReconciles:      opts.MaxConcurrentReconciles,
		Logger:                       logger,
		SkipControllerNameValidation: true,
	})
	if err != nil {
		tb.Fatalf("set up the operator: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	o.cancel = cancel
	go func() { o.done <- mgr.Start(ctx) }()
	tb.Cleanup(func() { o.Stop(tb) })
	return o
}

// Stop stops the operator and waits until it has stopped. It is safe to call twice.
func (o *Operator) Stop(tb testing.TB) {
	tb.Helper()
	if o.cancel == nil {
		return
	}
	o.cancel()
	o.cancel = nil
	select {
	case err := <-o.done:
		if err != nil {
			tb.Errorf("operator stopped with an error: %v", err)
		}
	case <-time.After(30 * time.Second):
		// What still runs says which runnable holds the manager up.
		var dump strings.Builder
		_ = pprof.Lookup("goroutine").WriteTo(&dump, 1)
		tb.Errorf("operator did not stop within 30s; goroutines:\n%s", dump.String())
	}
}

// Log is everything the operator logged so far, followed by what framework code logged through
// the global logger since the operator started.
func (o *Operator) Log() string { return o.log.String() + globalLog.String()[o.globalFrom:] }

var (
	globalLog     syncBuffer
	globalLogOnce sync.Once
)

// ClusterMember is a valid ClusterMember named name.
func ClusterMember(name string, clusterID int32) *polykubev1alpha1.ClusterMember {
	return &polykubev1alpha1.ClusterMember{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: polykubev1alpha1.ClusterMemberSpec{
			Provider: "kwok",
			Mesh: polykubev1alpha1.ClusterMeshSettings{
				ClusterID: clusterID,
				PodCIDRs:  []string{fmt.Sprintf("10.%d.0.0/16", clusterID)},
			},
		},
	}
}

// Namespace creates a namespace with a generated name and returns its name.
func Namespace(tb testing.TB, c client.Client, prefix string) string {
	tb.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	if err := c.Create(context.Background(), ns); err != nil {
		tb.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) Len() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Len()
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
