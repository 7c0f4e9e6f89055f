package workload_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/operator/internal/optest"
)

// failoverWorkload runs 3 replicas in each of east, west and north, with failover at the given
// timing and a maxSurge of 2 replicas, exposed by a ServiceEndpoint of its name when exposed.
func failoverWorkload(t *testing.T, c client.Client, ns, name string, detect, ret time.Duration, exposed bool) *polykubev1alpha1.Workload {
	t.Helper()
	w := workload(ns, name, map[string]int32{east: 3, "west": 3, "north": 3})
	surge := intstr.FromInt32(2)
	w.Spec.Distribution.Failover = &polykubev1alpha1.Failover{
		DetectAfter: &metav1.Duration{Duration: detect}, ReturnAfter: &metav1.Duration{Duration: ret}, MaxSurge: &surge,
	}
	Expect(c.Create(context.Background(), w)).To(Succeed())
	if exposed {
		se := &polykubev1alpha1.ServiceEndpoint{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: polykubev1alpha1.ServiceEndpointSpec{
				WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: name},
				Ports:       []polykubev1alpha1.WorkloadPort{httpPort},
			},
		}
		Expect(c.Create(context.Background(), se)).To(Succeed())
	}
	return w
}

// mirror creates or replaces the EndpointSlice Cilium would mirror for service from peer, with
// ready endpoints out of total. Cilium copies the local Service's labels onto the slices it
// mirrors, Polykube's managed-by among them: the operator caches only slices that carry it.
func mirror(t *testing.T, c client.Client, ns, service, peer string, ready, total int) {
	t.Helper()
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: service + "-" + peer, Labels: map[string]string{
			polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue,
			discoveryv1.LabelManagedBy:      meshview.ManagedBy,
			meshview.LabelSourceCluster:     peer,
			discoveryv1.LabelServiceName:    service,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i := range total {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.0.%d", len(peer), i+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(i < ready)},
		})
	}
	ctx := context.Background()
	existing := &discoveryv1.EndpointSlice{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(s), existing); err == nil {
		existing.Endpoints = s.Endpoints
		Expect(c.Update(ctx, existing)).To(Succeed())
		return
	}
	Expect(c.Create(ctx, s)).To(Succeed())
}

func replicasOf(g Gomega, c client.Client, ns, name string) int32 {
	return *getDeployment(g, c, ns, name).Spec.Replicas
}

func failoverStatus(g Gomega, c client.Client, ns, name string) (*polykubev1alpha1.FailoverStatus, *metav1.Condition) {
	w := &polykubev1alpha1.Workload{}
	g.Expect(c.Get(context.Background(), key(ns, name), w)).To(Succeed())
	return w.Status.Failover, meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.FailoverReadyCondition)
}

func hasEvent(g Gomega, c client.Client, ns, name, reason string) bool {
	var list eventsv1.EventList
	g.Expect(c.List(context.Background(), &list, client.InNamespace(ns))).To(Succeed())
	for _, e := range list.Items {
		if e.Regarding.Name == name && e.Reason == reason {
			return true
		}
	}
	return false
}

// A peer with too few ready endpoints for longer than detectAfter: this cluster runs base +
// extra, capped at maxSurge; after the peer recovers, the extra goes only after returnAfter.
func TestReconciler_Failover_AbsorbsCappedAndReturnsAfterReturnAfter(t *testing.T) {
	c := start(t)
	startOperator(t, east)
	ns := optest.Namespace(t, c, "failover")
	const detect, ret = 2 * time.Second, 6 * time.Second
	failoverWorkload(t, c, ns, "api", detect, ret, true)
	mirror(t, c, ns, "api", "west", 3, 3)
	mirror(t, c, ns, "api", "north", 3, 3)

	Eventually(func(g Gomega) {
		fs, cond := failoverStatus(g, c, ns, "api")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonSucceeded), cond.Message)
		g.Expect(fs).NotTo(BeNil())
		g.Expect(fs.EffectiveReplicas).To(Equal(int32(3)))
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	// The ServiceEndpoint's Service asks Cilium to mirror the peers' endpoints.
	Eventually(func(g Gomega) {
		svc := &corev1.Service{}
		g.Expect(c.Get(context.Background(), key(ns, "api"), svc)).To(Succeed())
		g.Expect(svc.Annotations).To(HaveKeyWithValue(meshview.SyncAnnotation, "true"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// west loses all 3 ready endpoints. Split over east and north (3 each), east takes 2 of
	// the 3 (Sainte-Laguë tie-break) or 1; either way it is capped at maxSurge 2.
	lost := time.Now()
	mirror(t, c, ns, "api", "west", 0, 3)
	var absorbedAt time.Time
	Eventually(func(g Gomega) {
		fs, cond := failoverStatus(g, c, ns, "api")
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonFailoverActive), cond.Message)
		g.Expect(fs.Peers).To(HaveLen(1))
		g.Expect(fs.Peers[0].Cluster).To(Equal("west"))
		g.Expect(fs.Peers[0].AbsorbedReplicas).To(Equal(int32(3)))
		g.Expect(fs.Peers[0].Since).NotTo(BeNil())
		g.Expect(fs.ExtraReplicas).To(BeNumerically(">=", 1))
		g.Expect(fs.ExtraReplicas).To(BeNumerically("<=", 2))
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(3 + fs.ExtraReplicas))
		absorbedAt = time.Now()
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	if d := absorbedAt.Sub(lost); d < detect-time.Second {
		t.Errorf("the deficit was absorbed %s after it appeared, before detectAfter %s", d, detect)
	}
	Eventually(func(g Gomega) bool { return hasEvent(g, c, ns, "api", polykubev1alpha1.ReasonFailoverStarted) }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "event FailoverStarted")

	// west is back: the extra stays for returnAfter, then goes.
	back := time.Now()
	mirror(t, c, ns, "api", "west", 3, 3)
	Consistently(func(g Gomega) {
		fs, _ := failoverStatus(g, c, ns, "api")
		g.Expect(fs.ExtraReplicas).To(BeNumerically(">=", 1))
		g.Expect(replicasOf(g, c, ns, "api")).To(BeNumerically(">", 3))
	}).WithTimeout(ret-2*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "the extra is kept for returnAfter")
	Eventually(func(g Gomega) {
		fs, cond := failoverStatus(g, c, ns, "api")
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonSucceeded), cond.Message)
		g.Expect(fs.Peers).To(BeEmpty())
		g.Expect(fs.EffectiveReplicas).To(Equal(int32(3)))
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	if d := time.Since(back); d < ret-time.Second {
		t.Errorf("the extra went %s after the peer recovered, before returnAfter %s", d, ret)
	}
	Eventually(func(g Gomega) bool { return hasEvent(g, c, ns, "api", polykubev1alpha1.ReasonFailoverEnded) }).
		WithTimeout(timeout).WithPolling(poll).Should(BeTrue(), "event FailoverEnded")
}

// A blip shorter than detectAfter changes nothing.
func TestReconciler_Failover_BlipShorterThanDetectAfterMovesNothing(t *testing.T) {
	c := start(t)
	startOperator(t, east)
	ns := optest.Namespace(t, c, "failover-blip")
	const detect = 10 * time.Second
	failoverWorkload(t, c, ns, "api", detect, 20*time.Second, true)
	mirror(t, c, ns, "api", "west", 3, 3)
	mirror(t, c, ns, "api", "north", 3, 3)
	Eventually(func(g Gomega) {
		_, cond := failoverStatus(g, c, ns, "api")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonSucceeded))
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	mirror(t, c, ns, "api", "north", 1, 3)
	Eventually(func(g Gomega) {
		fs, _ := failoverStatus(g, c, ns, "api")
		g.Expect(fs.Peers).To(HaveLen(1), "the blip is seen and waits")
		g.Expect(fs.Peers[0].PendingReplicas).To(Equal(int32(2)))
		g.Expect(fs.Peers[0].AbsorbedReplicas).To(BeZero())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	mirror(t, c, ns, "api", "north", 3, 3)
	Eventually(func(g Gomega) {
		fs, _ := failoverStatus(g, c, ns, "api")
		g.Expect(fs.Peers).To(BeEmpty(), "the blip ended: nothing waits")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Consistently(func(g Gomega) {
		fs, _ := failoverStatus(g, c, ns, "api")
		g.Expect(fs.ExtraReplicas).To(BeZero())
		g.Expect(replicasOf(g, c, ns, "api")).To(Equal(int32(3)))
	}).WithTimeout(detect + 2*time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
}

// Without spec.distribution.failover the Deployment runs the allocation whatever the slices say,
// and without a ServiceEndpoint failover runs the base and says why.
func TestReconciler_Failover_OffOrWithoutServiceEndpointRunsTheBase(t *testing.T) {
	c := start(t)
	startOperator(t, east)
	ns := optest.Namespace(t, c, "failover-off")
	w := workload(ns, "plain", map[string]int32{east: 3, "west": 3})
	Expect(c.Create(context.Background(), w)).To(Succeed())
	se := &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "plain"},
		Spec: polykubev1alpha1.ServiceEndpointSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "plain"},
			Ports:       []polykubev1alpha1.WorkloadPort{httpPort},
		},
	}
	Expect(c.Create(context.Background(), se)).To(Succeed())
	failoverWorkload(t, c, ns, "lonely", time.Second, time.Second, false)
	mirror(t, c, ns, "plain", "west", 0, 3)
	mirror(t, c, ns, "lonely", "west", 0, 3)

	Eventually(func(g Gomega) {
		fs, cond := failoverStatus(g, c, ns, "lonely")
		g.Expect(cond).NotTo(BeNil())
		g.Expect(cond.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonServiceEndpointMissing))
		g.Expect(fs.EffectiveReplicas).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Consistently(func(g Gomega) {
		fs, cond := failoverStatus(g, c, ns, "plain")
		g.Expect(fs).To(BeNil())
		g.Expect(cond).To(BeNil())
		g.Expect(replicasOf(g, c, ns, "plain")).To(Equal(int32(3)))
		g.Expect(replicasOf(g, c, ns, "lonely")).To(Equal(int32(3)))
	}).WithTimeout(4 * time.Second).WithPolling(250 * time.Millisecond).Should(Succeed())
	svc := &corev1.Service{}
	Expect(c.Get(context.Background(), key(ns, "plain"), svc)).To(Succeed())
	Expect(svc.Annotations).NotTo(HaveKey(meshview.SyncAnnotation), "no failover, no mirrored slices asked for")
}
