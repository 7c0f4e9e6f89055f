package workload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

// foreignPrefix names every object of TestReconciler_ForeignObjects_CauseNoReconcile that
// Polykube did not make and that no Workload is named after.
const foreignPrefix = "foreign-"

// A cluster holds many Deployments, Services and EndpointSlices that Polykube did not make; their
// creation and changes must not cost a reconcile (issue 40: reconciles ∝ Polykube's objects,
// not everything in the cluster). Two sentinel Workloads, each held in Conflict by a foreign
// object created before the burst and deleted after it, show that the operator has seen the
// whole burst: each informer delivers its events in order. The operator logs every reconcile
// (controller-runtime's "Reconciling", at V(5), which optest logs), so the ones for the
// burst's names are counted exactly.
func TestReconciler_ForeignObjects_CauseNoReconcile(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "foreign")
	const n = 100

	blockDep := optest.ForeignDeployment(ns, "sentinel-dep")
	Expect(c.Create(ctx, blockDep)).To(Succeed())
	blockSvc := optest.ForeignService(ns, "sentinel-svc")
	Expect(c.Create(ctx, blockSvc)).To(Succeed())
	op := startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "sentinel-dep", map[string]int32{east: 1}))).To(Succeed())
	Expect(c.Create(ctx, workload(ns, "sentinel-svc", map[string]int32{east: 1}, httpPort))).To(Succeed())
	eventuallyReady(t, c, ns, "sentinel-dep", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)
	eventuallyReady(t, c, ns, "sentinel-svc", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)

	// The burst: created, then each changed once, as other controllers keep doing.
	for i := range n {
		name := fmt.Sprintf("%s%03d", foreignPrefix, i)
		d := optest.ForeignDeployment(ns, name)
		Expect(c.Create(ctx, d)).To(Succeed())
		Expect(c.Create(ctx, optest.ForeignService(ns, name))).To(Succeed())
		Expect(c.Create(ctx, optest.ForeignSlice(ns, name))).To(Succeed())
		patch := client.MergeFrom(d.DeepCopy())
		d.Labels["revision"] = "2"
		Expect(c.Patch(ctx, d, patch)).To(Succeed())
	}

	Expect(c.Delete(ctx, blockDep)).To(Succeed())
	Expect(c.Delete(ctx, blockSvc)).To(Succeed())
	eventuallyReady(t, c, ns, "sentinel-dep", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	eventuallyReady(t, c, ns, "sentinel-svc", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)

	caused := reconcilesOf(t, op.Log(), ns, foreignPrefix)
	t.Logf("reconciles caused by %d foreign Deployments, %d Services and %d EndpointSlices: %d (goal 0)", n, n, n, len(caused))
	Expect(caused).To(BeEmpty(), "reconciles caused by objects Polykube did not make")
}

// reconcilesOf lists "controller namespace/name" of every reconcile the operator logged for an
// object in ns whose name starts with prefix.
func reconcilesOf(t *testing.T, log, ns, prefix string) []string {
	t.Helper()
	var out []string
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, `"Reconciling"`) {
			continue
		}
		var entry struct {
			Msg        string `json:"msg"`
			Controller string `json:"controller"`
			Namespace  string `json:"namespace"`
			Name       string `json:"name"`
		}
		if err := json.Unmarshal([]byte(line), &entry); err != nil {
			t.Fatalf("operator log line is not JSON: %v: %s", err, line)
		}
		if entry.Msg == "Reconciling" && entry.Namespace == ns && strings.HasPrefix(entry.Name, prefix) {
			out = append(out, entry.Controller+" "+entry.Namespace+"/"+entry.Name)
		}
	}
	return out
}
