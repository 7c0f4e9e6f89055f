package serviceendpoint

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/testenv"
)

// The integration tests share one real API server, started on first use so that the pure table
// tests in this package run without it. Each test starts its own manager with only this
// package's reconcilers and its own --cluster-name, and deletes what it created.

const (
	waitTimeout  = 30 * time.Second
	waitInterval = 100 * time.Millisecond
	// quietPeriod is how long steady-state assertions watch for unexpected writes.
	quietPeriod = 2 * time.Second
)

var (
	envOnce sync.Once
	env     *testenv.Env
	envErr  error
)

func TestMain(m *testing.M) {
	// Shown only when a test fails (or with -v).
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1}))
	code := m.Run()
	if env != nil {
		_ = env.Stop()
	}
	os.Exit(code)
}

// apiServer returns the config of the shared API server and fails the test when none can be
// started: these tests are never skipped.
func apiServer(t *testing.T) *rest.Config {
	t.Helper()
	envOnce.Do(func() { env, envErr = testenv.Start(context.Background(), testenv.Options{}) })
	if envErr != nil {
		t.Fatalf("this integration test needs a real kube-apiserver and etcd: %v", envErr)
	}
	return env.Config
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	if err := polykubev1alpha1.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return s
}

// sideEffects collects what the reconcilers did: the events a FakeRecorder records (drained
// without ever blocking the reconciler) and the write requests they sent.
type sideEffects struct {
	mu     sync.Mutex
	events []string
	writes atomic.Int64
}

// writeCount is the number of create, update, patch and delete requests sent so far, status
// included. A no-op patch counts: the API server accepts it without a new resourceVersion, so
// only counting requests shows whether steady state is quiet.
func (l *sideEffects) writeCount() int64 { return l.writes.Load() }

func (l *sideEffects) all() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.events...)
}

// count returns how many recorded events start with prefix ("Warning DuplicateClusterID").
func (l *sideEffects) count(prefix string) int {
	n := 0
	for _, e := range l.all() {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// startReconcilers runs a manager with this package's reconcilers as cluster clusterName until
// the test ends. It returns an uncached client for the test's own reads and writes.
func startReconcilers(t *testing.T, clusterName string) (client.Client, *sideEffects) {
	t.Helper()
	cfg := apiServer(t)
	scheme := newScheme(t)
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                 scheme,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		// Every test registers the same controller names in its own manager.
		Controller: config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatalf("create manager: %v", err)
	}
	recorder := events.NewFakeRecorder(1000)
	log := &sideEffects{}
	r := &Reconciler{Client: countingClient{Client: mgr.GetClient(), writes: &log.writes}, Scheme: mgr.GetScheme(), Recorder: recorder, ClusterName: clusterName}
	if err := r.SetupWithManager(mgr); err != nil {
		t.Fatalf("set up reconcilers: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	drained := make(chan struct{})
	go func() {
		defer close(drained)
		for {
			select {
			case e := <-recorder.Events:
				log.mu.Lock()
				log.events = append(log.events, e)
				log.mu.Unlock()
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager stopped with an error: %v", err)
		}
		<-drained
	})

	c, err := client.New(cfg, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatalf("create client: %v", err)
	}
	return c, log
}

// create creates obj and deletes it when the test ends.
func create(t *testing.T, c client.Client, obj client.Object) {
	t.Helper()
	if err := c.Create(context.Background(), obj); err != nil {
		t.Fatalf("create %T %s: %v", obj, obj.GetName(), err)
	}
	t.Cleanup(func() {
		if err := c.Delete(context.Background(), obj); client.IgnoreNotFound(err) != nil {
			t.Errorf("delete %T %s: %v", obj, obj.GetName(), err)
		}
	})
}

// countingClient counts write requests; the count goes up before the request is sent, so a
// write the test has observed in the API server is always already counted.
type countingClient struct {
	client.Client
	writes *atomic.Int64
}

func (c countingClient) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	c.writes.Add(1)
	return c.Client.Create(ctx, obj, opts...)
}

func (c countingClient) Update(ctx context.Context, obj client.Object, opts ...client.UpdateOption) error {
	c.writes.Add(1)
	return c.Client.Update(ctx, obj, opts...)
}

func (c countingClient) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
	c.writes.Add(1)
	return c.Client.Patch(ctx, obj, patch, opts...)
}

func (c countingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	c.writes.Add(1)
	return c.Client.Delete(ctx, obj, opts...)
}

func (c countingClient) Status() client.SubResourceWriter {
	return countingStatusWriter{SubResourceWriter: c.Client.Status(), writes: c.writes}
}

type countingStatusWriter struct {
	client.SubResourceWriter
	writes *atomic.Int64
}

func (w countingStatusWriter) Update(ctx context.Context, obj client.Object, opts ...client.SubResourceUpdateOption) error {
	w.writes.Add(1)
	return w.SubResourceWriter.Update(ctx, obj, opts...)
}

func (w countingStatusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	w.writes.Add(1)
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
