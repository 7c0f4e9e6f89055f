package federation

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/rectest"
)

// startReconcilersAt runs this package's reconcilers as cluster clusterName, reporting
// operatorVersion, until the test ends.
func startReconcilersAt(t *testing.T, clusterName, operatorVersion string) client.Client {
	t.Helper()
	cfg := env.Start(t)
	c, _ := rectest.StartReconcilers(t, cfg, func(mgr ctrl.Manager, recorder events.EventRecorder) error {
		r := &Reconciler{Client: mgr.GetClient(), Scheme: mgr.GetScheme(), Recorder: recorder,
			ClusterName: clusterName, OperatorVersion: operatorVersion}
		return r.SetupWithManager(mgr)
	})
	return c
}

// TestReconciler_ClusterMember_OperatorVersionFollowsUpgrade checks that the local ClusterMember
// reports the running operator's version, that a restart on a new release updates it (an
// in-place upgrade), and that a peer's ClusterMember never carries this operator's version.
func TestReconciler_ClusterMember_OperatorVersionFollowsUpgrade(t *testing.T) {
	versions := func(t *testing.T, c client.Client, want map[string]string) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			for name, v := range want {
				m := &polykubev1alpha1.ClusterMember{}
				g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, m)).To(Succeed())
				g.Expect(m.Status.OperatorVersion).To(Equal(v), "status.operatorVersion of ClusterMember %s", name)
			}
		}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	}

	t.Run("previous release", func(t *testing.T) {
		c := startReconcilersAt(t, "ver-a", "v0.1.0")
		for _, m := range []*polykubev1alpha1.ClusterMember{newMember("ver-a", 111, "10.111.0.0/16"), newMember("ver-b", 112, "10.112.0.0/16")} {
			if err := c.Create(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
		versions(t, c, map[string]string{"ver-a": "v0.1.0", "ver-b": ""})
	})
	t.Run("upgraded in place", func(t *testing.T) {
		c := startReconcilersAt(t, "ver-a", "v0.2.0")
		t.Cleanup(func() {
			for _, name := range []string{"ver-a", "ver-b"} {
				_ = c.Delete(context.Background(), &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: name}})
			}
		})
		versions(t, c, map[string]string{"ver-a": "v0.2.0", "ver-b": ""})
	})
}
