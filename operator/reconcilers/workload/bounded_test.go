package workload

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/placement"
)

// The whole Workload reconcile at ClusterMesh's limit, 511 members with 32-character names,
// through the states whose status names clusters: every condition the reconciler writes stays
// within the API's 32 KiB, every event note within the Events API's 1 KiB, and the Workload
// within 256 KiB.
func TestReconciler_BoundedAt511Members(t *testing.T) {
	const maxCondition, maxNote, maxObject = 32 * 1024, 1024, 256 * 1024
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())

	clusters := make([]string, 511)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("member-%03d-abcdefghijklmnopqrstu", i)
	}
	g.Expect(clusters[0]).To(HaveLen(32))
	local := clusters[0]
	wl := testWorkload()
	wl.Generation = 1
	surge := intstr.FromString("100%")
	wl.Spec.Distribution = polykubev1alpha1.Distribution{
		Strategy: polykubev1alpha1.StrategyStatic,
		Failover: &polykubev1alpha1.Failover{
			DetectAfter: &metav1.Duration{Duration: time.Minute}, ReturnAfter: &metav1.Duration{Duration: 5 * time.Minute}, MaxSurge: &surge,
		},
	}
	for _, c := range clusters {
		wl.Spec.Distribution.Targets = append(wl.Spec.Distribution.Targets, polykubev1alpha1.DistributionTarget{ClusterRef: c, Replicas: ptr.To[int32](3)})
	}
	se := &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api"},
		Spec:       polykubev1alpha1.ServiceEndpointSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"}},
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&polykubev1alpha1.Workload{}).
		WithObjects(wl, se, &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: local}}).
		WithIndex(&discoveryv1.EndpointSlice{}, MirroredSliceIndex, MirroredSliceService).Build()
	var notes []string
	now := time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC)
	r := &Reconciler{Client: c, Scheme: scheme, ClusterName: local, Recorder: noteRecorder{&notes}, Now: func() time.Time { return now }}

	mirrorAll := func(source func(string) string, ready int) {
		for _, peer := range clusters[1:] {
			s := &discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-" + peer, Labels: map[string]string{
					discoveryv1.LabelManagedBy: meshview.ManagedBy, meshview.LabelSourceCluster: source(peer), discoveryv1.LabelServiceName: "api",
				}},
				AddressType: discoveryv1.AddressTypeIPv4,
			}
			for i := range 3 {
				s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
					Addresses: []string{fmt.Sprintf("10.1.%d.%d", i, len(peer))}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(i < ready)},
				})
			}
			existing := &discoveryv1.EndpointSlice{}
			if err := c.Get(context.Background(), client.ObjectKeyFromObject(s), existing); err == nil {
				g.Expect(c.Delete(context.Background(), existing)).To(Succeed())
			}
			g.Expect(c.Create(context.Background(), s)).To(Succeed())
		}
	}
	reconcileAndCheck := func(when string, after time.Duration) {
		t.Helper()
		now = now.Add(after)
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(wl)})
		g.Expect(err).NotTo(HaveOccurred(), when)
		got := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(wl), got)).To(Succeed())
		for _, cond := range got.Status.Conditions {
			if len(cond.Message) > maxCondition {
				t.Errorf("%s: condition %s/%s has %d bytes, over %d", when, cond.Type, cond.Reason, len(cond.Message), maxCondition)
			}
		}
		for _, n := range notes {
			if len(n) > maxNote {
				t.Errorf("%s: an event note has %d bytes, over %d: %.120s...", when, len(n), maxNote, n)
			}
		}
		raw, err := json.Marshal(got)
		g.Expect(err).NotTo(HaveOccurred())
		if len(raw) > maxObject {
			t.Errorf("%s: the Workload is %d bytes, over %d", when, len(raw), maxObject)
		}
		fo := meta.FindStatusCondition(got.Status.Conditions, polykubev1alpha1.FailoverReadyCondition)
		g.Expect(fo).NotTo(BeNil(), when)
		t.Logf("%s: Workload %d bytes, FailoverReady %s (%d bytes), %d events so far", when, len(raw), fo.Reason, len(fo.Message), len(notes))
	}

	mirrorAll(func(p string) string { return "kind-" + p }, 3)
	reconcileAndCheck("510 sources that are no target", 0)
	mirrorAll(func(p string) string { return p }, 0)
	reconcileAndCheck("510 peers down, pending", time.Second)
	reconcileAndCheck("510 peers down, absorbed", time.Minute)
	g.Expect(notes).To(ContainElement(ContainSubstring("and 500 more")))
	mirrorAll(func(p string) string { return p }, 3)
	reconcileAndCheck("510 peers back, pending", time.Second)
	reconcileAndCheck("510 peers back, given back", 5*time.Minute)
}

// The Allocated message names the first ten clusters' shares and counts the rest: its size does
// not grow with the roster (status.targets has every share).
func TestAllocationMessage_BoundedWhateverTheRoster(t *testing.T) {
	g := NewWithT(t)
	three := placement.Allocation{{Cluster: "a", Replicas: 2}, {Cluster: "b", Replicas: 2}, {Cluster: "c", Replicas: 2}}
	g.Expect(allocationMessage(three, nil)).To(Equal("replicas per cluster: a=2, b=2, c=2"))
	var alloc placement.Allocation
	var bounds placement.BoundsAllocation
	for i := range 511 {
		name := fmt.Sprintf("member-%03d-abcdefghijklmnopqrstu", i)
		alloc = append(alloc, placement.Share{Cluster: name, Replicas: 2})
		bounds = append(bounds, placement.Bounds{Cluster: name, Min: 2, Max: 100000})
	}
	msg := allocationMessage(alloc, nil)
	g.Expect(msg).To(HavePrefix("replicas per cluster: member-000-abcdefghijklmnopqrstu=2, "))
	g.Expect(msg).To(HaveSuffix("member-009-abcdefghijklmnopqrstu=2 and 501 more (1022 replicas over 511 clusters; polykube-status lists each)"))
	g.Expect(len(msg)).To(BeNumerically("<", 512), msg)
	msg = allocationMessage(alloc, bounds)
	g.Expect(msg).To(HaveSuffix("member-009-abcdefghijklmnopqrstu=2..100000 and 501 more (at least 1022 replicas over 511 clusters; polykube-status lists each)"))
	g.Expect(len(msg)).To(BeNumerically("<", 640), msg)
}
