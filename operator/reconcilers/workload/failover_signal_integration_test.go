package workload_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
)

// exposeAs creates a ServiceEndpoint named name for the Workload api.
func exposeAs(t *testing.T, c client.Client, ns, name string, global bool) {
	t.Helper()
	Expect(c.Create(context.Background(), &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: polykubev1alpha1.ServiceEndpointSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"},
			Ports:       []polykubev1alpha1.WorkloadPort{httpPort},
			Global:      ptr.To(global),
		},
	})).To(Succeed())
}

// staysAtBase checks for longer than detectAfter that the Workload runs its base 3 and nothing
// is absorbed or waits, with FailoverReady at reason.
func staysAtBase(t *testing.T, c client.Client, ns string, detect time.Duration, reason string) {
	t.Helper()
	Consistently(func(g Gomega) {
		fs, cond := failoverStatus(g, c, ns, "api")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(reason), cond.Message)
		g.Expect(fs.Peers).To(BeEmpty(), "nothing absorbed or waiting")
		g.Expect(fs.EffectiveReplicas).To(Equal(int32(3)))
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(detect + 3*time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// No EndpointSlice mirrored from any peer (endpoint-slice sync off): no cluster surges.
func TestReconciler_Failover_NoMeshViewAbsorbsNothingNew(t *testing.T) {
	c := start(t)
	startOperator(t, east)
	ns := optest.Namespace(t, c, "failover-noview")
	const detect = 2 * time.Second
	failoverWorkload(t, c, ns, "api", detect, 4*time.Second, true)
	Eventually(func(g Gomega) {
		_, cond := failoverStatus(g, c, ns, "api")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonNoMeshView))
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	staysAtBase(t, c, ns, detect, polykubev1alpha1.ReasonNoMeshView)
}

// A same-name ServiceEndpoint with global: false, or one in Conflict, is passed over for a
// global one that refers to the Workload.
func TestReconciler_Failover_OnlyAGlobalServiceEndpointNotInConflictIsTheSignal(t *testing.T) {
	c := start(t)
	startOperator(t, east)
	const detect = 2 * time.Second
	for name, sameName := range map[string]func(ns string){
		"global-false": func(ns string) { exposeAs(t, c, ns, "api", false) },
		"conflict": func(ns string) {
			// A Service of that name that the ServiceEndpoint did not create: Conflict.
			Expect(c.Create(context.Background(), &corev1.Service{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
				Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
			})).To(Succeed())
			exposeAs(t, c, ns, "api", true)
		},
	} {
		// One after the other in the test's own goroutine (Gomega's global handler is the test's).
		{
			t.Logf("same-name ServiceEndpoint: %s", name)
			ns := optest.Namespace(t, c, "failover-"+name)
			failoverWorkload(t, c, ns, "api", detect, 4*time.Second, false)
			sameName(ns)
			exposeAs(t, c, ns, "api-mesh", true)
			mirror(t, c, ns, "api-mesh", "west", 3, 3)
			mirror(t, c, ns, "api-mesh", "north", 3, 3)
			// Between the two mirrors the operator may have seen west alone, so north's deficit
			// waited for a moment: wait until both are seen and nothing waits, then hold.
			Eventually(func(g Gomega) {
				fs, cond := failoverStatus(g, c, ns, "api")
				g.Expect(cond).NotTo(BeNil())
				g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonSucceeded), cond.Message)
				g.Expect(fs.Peers).To(BeEmpty(), "nothing absorbed or waiting once both peers are seen")
			}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
			staysAtBase(t, c, ns, detect, polykubev1alpha1.ReasonSucceeded)
		}
	}
}

// Cilium's cluster.name is not the ClusterMember name: the slices come from sources that are
// no target. That is no view of the targets (no surge), and the condition names the sources.
func TestReconciler_Failover_MirroredSourcesThatAreNoTargetsAreNamed(t *testing.T) {
	c := start(t)
	startOperator(t, east)
	ns := optest.Namespace(t, c, "failover-misnamed")
	const detect = 2 * time.Second
	failoverWorkload(t, c, ns, "api", detect, 4*time.Second, true)
	mirror(t, c, ns, "api", "kind-west", 3, 3)
	mirror(t, c, ns, "api", "kind-north", 3, 3)
	Eventually(func(g Gomega) {
		_, cond := failoverStatus(g, c, ns, "api")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonNoMeshView), cond.Message)
		g.Expect(cond.Message).To(ContainSubstring("Slices are mirrored from kind-north, kind-west, which are no targets of this Workload: is Cilium's cluster.name the ClusterMember name?"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	staysAtBase(t, c, ns, detect, polykubev1alpha1.ReasonNoMeshView)
}

// A peer's ready count that moves above its share changes no decision and writes nothing: ten
// flips of west between 3 and 4 ready endpoints (its share is 2) make no status write.
func TestReconciler_Failover_PeerChurnAboveTheShareWritesNothing(t *testing.T) {
	c := start(t)
	op := startOperator(t, east)
	ns := optest.Namespace(t, c, "failover-churn")
	w := workload(ns, "api", map[string]int32{east: 2, "west": 2, "north": 2})
	surge := intstr.FromInt32(2)
	w.Spec.Distribution.Failover = &polykubev1alpha1.Failover{
		DetectAfter: &metav1.Duration{Duration: 2 * time.Second}, ReturnAfter: &metav1.Duration{Duration: 4 * time.Second}, MaxSurge: &surge,
	}
	Expect(c.Create(context.Background(), w)).To(Succeed())
	exposeAs(t, c, ns, "api", true)
	mirror(t, c, ns, "api", "west", 3, 4)
	mirror(t, c, ns, "api", "north", 2, 2)
	Eventually(func(g Gomega) {
		_, cond := failoverStatus(g, c, ns, "api")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonSucceeded), cond.Message)
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(2)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	// Settled: no write for a while (the Deployment's status, the first events).
	last := -1
	Eventually(func() bool {
		n, prev := op.Writes.Writes(), last
		last = n
		return n == prev
	}).WithTimeout(timeout).WithPolling(time.Second).Should(BeTrue(), "writes did not stop: %v", op.Writes.WriteSummary())
	op.Writes.Reset()

	// The operator logs each failover step with the counts it saw; each flip is waited for there.
	seen := func(ready int) int { return strings.Count(op.Log(), fmt.Sprintf(`west=%d"`, ready)) }
	for i := range 10 {
		ready := 4 - i%2
		before := seen(ready)
		mirror(t, c, ns, "api", "west", ready, 4)
		Eventually(func() int { return seen(ready) }).WithTimeout(timeout).WithPolling(poll).
			Should(BeNumerically(">", before), "the operator stepped failover with west=%d (flip %d)", ready, i+1)
	}
	statusWrites := 0
	for _, line := range op.Writes.WriteSummary() {
		if strings.Contains(line, "/workloads/api/status") {
			var n int
			_, _ = fmt.Sscanf(line, "%d", &n)
			statusWrites += n
		}
	}
	t.Logf("writes during 10 flips: %v", op.Writes.WriteSummary())
	Expect(statusWrites).To(BeZero(), "status writes of the Workload for 10 flips that change no decision: %v", op.Writes.WriteSummary())
	Expect(op.Writes.Writes()).To(BeZero(), "no write at all: %v", op.Writes.WriteSummary())
}
