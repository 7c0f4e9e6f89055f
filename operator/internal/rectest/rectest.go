// Package rectest tests one package's reconcilers on their own against a real API server:
// each test starts a manager with only the reconcilers it registers, events go to a recorder
// the test reads, and every API write the manager sends is counted. (optest runs the whole
// operator; the reconciler packages cannot use it, since the operator imports them.)
package rectest

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/go-logr/logr/funcr"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/operator/internal/apicount"
)

// Env is one real API server shared by the tests of a package, started on first use so that
// a package's pure tests run without it.
type Env struct {
	once sync.Once
	env  *testenv.Env
	err  error
}

// Start returns the running API server's admin config, starting it on the first call. It
// fails the test (never skips) when the API server cannot start.
func (e *Env) Start(tb testing.TB) *rest.Config {
	tb.Helper()
	e.once.Do(func() { e.env, e.err = testenv.Start(context.Background(), testenv.Options{}) })
	if e.err != nil {
		tb.Fatalf("these integration tests need a real kube-apiserver and etcd: %v", e.err)
	}
	return e.env.Config
}

// AddUser returns a config that authenticates as user (RBAC applies to it: the API server runs
// with --authorization-mode=RBAC). Start must have been called.
func (e *Env) AddUser(tb testing.TB, user envtest.User) *rest.Config {
	tb.Helper()
	u, err := e.env.AddUser(user, e.env.Config)
	if err != nil {
		tb.Fatalf("add API user %s: %v", user.Name, err)
	}
	return u.Config()
}

// Stop stops the API server if it was started.
func (e *Env) Stop() {
	if e.env != nil {
		_ = e.env.Stop()
	}
}

// Main runs a package's tests with the controller-runtime log on stderr (go test shows it only
// for failing tests, or with -v) and stops env's API server afterwards. Call it from TestMain.
func Main(m *testing.M, env *Env) {
	ctrl.SetLogger(funcr.New(func(prefix, args string) { fmt.Fprintln(os.Stderr, prefix, args) }, funcr.Options{Verbosity: 1}))
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// Effects is what the reconcilers did that the API objects do not show: the events they
// recorded and the write requests they sent.
type Effects struct {
	mu     sync.Mutex
	events []string
	api    apicount.Counter
}

// WriteCount is the number of create, update, patch and delete requests sent so far, status
// included. A no-op patch counts: the API server accepts it without a new resourceVersion, so
// only counting requests shows whether steady state is quiet. A request is counted before it
// is sent, so a write the test has observed is always counted already.
func (e *Effects) WriteCount() int { return e.api.Writes() }

// Events are the recorded events, as "Type Reason Note" strings.
func (e *Effects) Events() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return append([]string(nil), e.events...)
}

// CountEvents is how many recorded events start with prefix ("Warning DuplicateClusterID").
func (e *Effects) CountEvents(prefix string) int {
	n := 0
	for _, ev := range e.Events() {
		if strings.HasPrefix(ev, prefix) {
			n++
		}
	}
	return n
}

// Register adds a package's reconcilers to mgr; recorder is where their events go.
type Register func(mgr ctrl.Manager, recorder events.EventRecorder) error

// StartReconcilers runs a manager on cfg with the reconcilers register adds until the test
// ends, and returns an uncached client for the test's own reads and writes (not counted).
func StartReconcilers(t *testing.T, cfg *rest.Config, register Register) (client.Client, *Effects) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := polykubev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	fx := &Effects{}
	mgr, err := ctrl.NewManager(fx.api.Wrap(cfg), ctrl.Options{
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
	if err := register(mgr, recorder); err != nil {
		t.Fatalf("set up reconcilers: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	drained := make(chan struct{})
	go func() { // drain the recorder so that it never blocks a reconciler
		defer close(drained)
		for {
			select {
			case ev := <-recorder.Events:
				fx.mu.Lock()
				fx.events = append(fx.events, ev)
				fx.mu.Unlock()
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
	return c, fx
}

// Create creates obj and deletes it when the test ends.
func Create(t *testing.T, c client.Client, obj client.Object) {
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
