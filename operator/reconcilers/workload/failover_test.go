package workload

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/placement"
)

func mirroredSliceOf(peer string, ready int) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-" + peer, Labels: map[string]string{
			discoveryv1.LabelManagedBy: meshview.ManagedBy, meshview.LabelSourceCluster: peer, discoveryv1.LabelServiceName: "api",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i := range ready {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.9.0." + string(rune('1'+i))}})
	}
	return s
}

// The failover step with an injected clock: it waits detectAfter (and requeues for it), then
// runs base + extra; the state it keeps in the status resumes in a new reconciler (a restart);
// the extra goes only after returnAfter.
func TestReconciler_failover_InjectedClock(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())

	wl := testWorkload()
	wl.Spec.Distribution = polykubev1alpha1.Distribution{
		Strategy: polykubev1alpha1.StrategyStatic,
		Targets: []polykubev1alpha1.DistributionTarget{
			{ClusterRef: "east", Replicas: ptr.To[int32](4)}, {ClusterRef: "west", Replicas: ptr.To[int32](4)},
		},
		Failover: &polykubev1alpha1.Failover{
			DetectAfter: &metav1.Duration{Duration: time.Minute}, ReturnAfter: &metav1.Duration{Duration: 5 * time.Minute},
		},
	}
	se := &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec:       polykubev1alpha1.ServiceEndpointSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"}},
	}
	west := mirroredSliceOf("west", 1)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(se, west).
		WithIndex(&discoveryv1.EndpointSlice{}, MirroredSliceIndex, MirroredSliceService).Build()
	now := time.Date(2026, 12, 3, 10, 0, 0, 500_000_000, time.UTC)
	r := &Reconciler{Client: c, ClusterName: "east", Now: func() time.Time { return now }}
	spec, err := placement.SpecFromWorkloadIn(wl, nil)
	g.Expect(err).NotTo(HaveOccurred())
	alloc, err := placement.ForWorkloadSpec(wl, spec)
	g.Expect(err).NotTo(HaveOccurred())
	step := func(r *Reconciler) failoverOutcome {
		out, err := r.failover(context.Background(), wl, spec, alloc, 4)
		g.Expect(err).NotTo(HaveOccurred())
		return out
	}

	out := step(r)
	g.Expect(out.replicas).To(Equal(int32(4)), "a new deficit waits detectAfter")
	g.Expect(out.requeueAfter).To(BeNumerically("~", time.Minute, time.Second))
	g.Expect(wl.Status.Failover.Peers).To(HaveLen(1))
	g.Expect(wl.Status.Failover.Peers[0].PendingReplicas).To(Equal(int32(3)))

	now = now.Add(time.Minute)
	r = &Reconciler{Client: c, ClusterName: "east", Now: func() time.Time { return now }} // a restart: only the status remembers
	out = step(r)
	g.Expect(out.replicas).To(Equal(int32(7)), "base 4 + west's deficit 3 (under the default cap of 100%)")
	g.Expect(out.requeueAfter).To(BeZero())
	g.Expect(wl.Status.Failover).To(Equal(&polykubev1alpha1.FailoverStatus{
		BaseReplicas: 4, ExtraReplicas: 3, EffectiveReplicas: 7,
		Peers: []polykubev1alpha1.PeerFailoverStatus{{Cluster: "west", AbsorbedReplicas: 3, Since: ptr.To(metav1.NewTime(now.Truncate(time.Second)))}},
	}))

	west.Endpoints = mirroredSliceOf("west", 4).Endpoints
	g.Expect(c.Update(context.Background(), west)).To(Succeed())
	now = now.Add(time.Second)
	out = step(r)
	g.Expect(out.replicas).To(Equal(int32(7)), "make-before-break: the extra stays for returnAfter")
	g.Expect(out.requeueAfter).To(BeNumerically("~", 5*time.Minute, time.Second))
	now = now.Add(5 * time.Minute)
	out = step(r)
	g.Expect(out.replicas).To(Equal(int32(4)))
	g.Expect(wl.Status.Failover.Peers).To(BeEmpty())

	// Without a ServiceEndpoint: the base, and the condition says why.
	g.Expect(c.Delete(context.Background(), se)).To(Succeed())
	west.Endpoints = nil
	g.Expect(c.Update(context.Background(), west)).To(Succeed())
	now = now.Add(time.Hour)
	out = step(r)
	g.Expect(out.replicas).To(Equal(int32(4)))
	g.Expect(wl.Status.Conditions).To(ContainElement(HaveField("Reason", polykubev1alpha1.ReasonServiceEndpointMissing)))
}
