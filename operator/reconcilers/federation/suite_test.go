package federation

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/operator/internal/rectest"
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

var env rectest.Env

func TestMain(m *testing.M) { rectest.Main(m, &env) }

// startReconcilers runs this package's reconcilers as cluster clusterName until the test ends.
func startReconcilers(t *testing.T, clusterName string) (client.Client, *rectest.Effects) {
	t.Helper()
	cfg := env.Start(t)
	return rectest.StartReconcilers(t, cfg, func(mgr ctrl.Manager, recorder events.EventRecorder) error {
		r := &Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: recorder, ClusterName: clusterName}
		return r.SetupWithManager(mgr)
	})
}
