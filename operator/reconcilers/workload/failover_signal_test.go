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
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/placement"
)

// failoverBench is a Workload with failover over the given targets (3 replicas each), this
// cluster being the first, and a Reconciler over a fake client with an injected clock.
type failoverBench struct {
	t     *testing.T
	g     Gomega
	c     client.Client
	wl    *polykubev1alpha1.Workload
	spec  placement.Spec
	alloc placement.Allocation
	now   time.Time
	notes []string
}

const (
	benchDetect = time.Minute
	benchReturn = 5 * time.Minute
)

func newFailoverBench(t *testing.T, clusters []string, share int32, objs ...client.Object) *failoverBench {
	t.Helper()
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())
	wl := testWorkload()
	surge := intstr.FromString("10000%")
	wl.Spec.Distribution = polykubev1alpha1.Distribution{
		Strategy: polykubev1alpha1.StrategyStatic,
		Failover: &polykubev1alpha1.Failover{
			DetectAfter: &metav1.Duration{Duration: benchDetect}, ReturnAfter: &metav1.Duration{Duration: benchReturn}, MaxSurge: &surge,
		},
	}
	for _, c := range clusters {
		wl.Spec.Distribution.Targets = append(wl.Spec.Distribution.Targets, polykubev1alpha1.DistributionTarget{ClusterRef: c, Replicas: ptr.To(share)})
	}
	spec, err := placement.SpecFromWorkloadIn(wl, nil)
	g.Expect(err).NotTo(HaveOccurred())
	alloc, err := placement.ForWorkloadSpec(wl, spec)
	g.Expect(err).NotTo(HaveOccurred())
	return &failoverBench{
		t: t, g: g, wl: wl, spec: spec, alloc: alloc,
		c: fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithStatusSubresource(&polykubev1alpha1.ServiceEndpoint{}).
			WithIndex(&discoveryv1.EndpointSlice{}, MirroredSliceIndex, MirroredSliceService).Build(),
		now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC),
	}
}

// step runs the failover step at the bench's clock, after advancing it by d.
func (b *failoverBench) step(d time.Duration) failoverOutcome {
	b.t.Helper()
	b.now = b.now.Add(d)
	now := b.now
	r := &Reconciler{Client: b.c, ClusterName: b.wl.Spec.Distribution.Targets[0].ClusterRef, Now: func() time.Time { return now }, Recorder: noteRecorder{&b.notes}}
	base, _ := b.alloc.For(r.ClusterName)
	out, err := r.failover(context.Background(), b.wl, b.spec, b.alloc, base)
	b.g.Expect(err).NotTo(HaveOccurred())
	return out
}

func (b *failoverBench) condition() *metav1.Condition {
	c := meta.FindStatusCondition(b.wl.Status.Conditions, polykubev1alpha1.FailoverReadyCondition)
	b.g.Expect(c).NotTo(BeNil())
	return c
}

// mirror creates or replaces the slice Cilium mirrors for service from source with ready of
// total endpoints ready.
func (b *failoverBench) mirror(service, source string, ready, total int) {
	b.t.Helper()
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: service + "-" + source, Labels: map[string]string{
			discoveryv1.LabelManagedBy: meshview.ManagedBy, meshview.LabelSourceCluster: source, discoveryv1.LabelServiceName: service,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
	}
	for i := range total {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{
			Addresses:  []string{fmt.Sprintf("10.%d.%d.%d", len(source), i/250, i%250+1)},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(i < ready)},
		})
	}
	existing := &discoveryv1.EndpointSlice{}
	if err := b.c.Get(context.Background(), client.ObjectKeyFromObject(s), existing); err == nil {
		existing.Endpoints = s.Endpoints
		b.g.Expect(b.c.Update(context.Background(), existing)).To(Succeed())
		return
	}
	b.g.Expect(b.c.Create(context.Background(), s)).To(Succeed())
}

func (b *failoverBench) unmirror(service, source string) {
	b.t.Helper()
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: service + "-" + source}}
	b.g.Expect(b.c.Delete(context.Background(), s)).To(Succeed())
}

func serviceEndpoint(name string, global bool) *polykubev1alpha1.ServiceEndpoint {
	return &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec:       polykubev1alpha1.ServiceEndpointSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"}, Global: ptr.To(global)},
	}
}

func withConflict(se *polykubev1alpha1.ServiceEndpoint) *polykubev1alpha1.ServiceEndpoint {
	se.Status.Conditions = []metav1.Condition{{
		Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionFalse, Reason: polykubev1alpha1.ReasonConflict,
		Message: "Service shop/" + se.Name + " exists and was not created by this ServiceEndpoint", LastTransitionTime: metav1.Now(),
	}}
	return se
}

// noteRecorder keeps the notes of the events, formatted as the API server would store them.
type noteRecorder struct{ notes *[]string }

func (n noteRecorder) Eventf(_ runtime.Object, _ runtime.Object, _, _, _, note string, args ...any) {
	*n.notes = append(*n.notes, fmt.Sprintf(note, args...))
}

var eastWestNorth = []string{"east", "west", "north"}

// No mirrored slice from any peer (Cilium's endpoint-slice sync off, a wrong cluster.name, the
// Service not global): nothing new is absorbed, however long it lasts.
func TestReconciler_failover_NoViewAbsorbsNothingNew(t *testing.T) {
	b := newFailoverBench(t, eastWestNorth, 3, serviceEndpoint("api", true))
	b.g.Expect(b.step(0).replicas).To(Equal(int32(3)))
	b.g.Expect(b.condition().Reason).To(Equal(polykubev1alpha1.ReasonNoMeshView))
	out := b.step(benchDetect + time.Second)
	b.g.Expect(out.replicas).To(Equal(int32(3)), "no view is no deficit: the base share, not a surge")
	b.g.Expect(b.wl.Status.Failover.Peers).To(BeEmpty(), "nothing waits to be absorbed")
	b.g.Expect(b.condition().Reason).To(Equal(polykubev1alpha1.ReasonNoMeshView))
	b.g.Expect(b.condition().Message).To(ContainSubstring("absorbs no new deficit"))
	b.g.Expect(b.notes).To(BeEmpty(), "no FailoverStarted")
}

// A deficit absorbed while the view was there is held when the view goes, past returnAfter.
func TestReconciler_failover_NoViewHoldsWhatIsAbsorbed(t *testing.T) {
	b := newFailoverBench(t, eastWestNorth, 3, serviceEndpoint("api", true))
	b.mirror("api", "west", 3, 3)
	b.mirror("api", "north", 0, 3)
	b.step(0)
	out := b.step(benchDetect)
	b.g.Expect(out.replicas).To(BeNumerically(">", 3), "north's deficit is absorbed")
	absorbed := out.replicas

	b.unmirror("api", "west")
	b.unmirror("api", "north")
	out = b.step(time.Second)
	b.g.Expect(out.replicas).To(Equal(absorbed))
	out = b.step(benchReturn + time.Hour)
	b.g.Expect(out.replicas).To(Equal(absorbed), "held without a view, past returnAfter")
	b.g.Expect(b.wl.Status.Failover.Peers).To(ConsistOf(HaveField("Cluster", "north")))
	b.g.Expect(b.wl.Status.Failover.Peers[0].AbsorbedReplicas).To(Equal(int32(3)))
	b.g.Expect(b.condition().Reason).To(Equal(polykubev1alpha1.ReasonNoMeshView))
	b.g.Expect(b.condition().Message).To(ContainSubstring("holds"))

	// The view is back, every peer serving: the extra goes after returnAfter, make-before-break.
	b.mirror("api", "west", 3, 3)
	b.mirror("api", "north", 3, 3)
	b.g.Expect(b.step(time.Second).replicas).To(Equal(absorbed))
	b.g.Expect(b.step(benchReturn).replicas).To(Equal(int32(3)))
}

// Only a global ServiceEndpoint that is not in Conflict shows the peers: a same-name one that
// is not global, or one in Conflict, is passed over for another that qualifies.
func TestReconciler_failover_SignalIsAGlobalServiceEndpointNotInConflict(t *testing.T) {
	for name, se := range map[string]*polykubev1alpha1.ServiceEndpoint{
		"same name, global: false": serviceEndpoint("api", false),
		"same name, in Conflict":   withConflict(serviceEndpoint("api", true)),
	} {
		t.Run(name, func(t *testing.T) {
			b := newFailoverBench(t, eastWestNorth, 3, se, serviceEndpoint("api-mesh", true))
			b.mirror("api-mesh", "west", 3, 3)
			b.mirror("api-mesh", "north", 3, 3)
			b.step(0)
			b.g.Expect(b.step(benchDetect + time.Second).replicas).To(Equal(int32(3)))
			b.g.Expect(b.condition().Reason).To(Equal(polykubev1alpha1.ReasonSucceeded), b.condition().Message)
		})
	}
	t.Run("none qualifies", func(t *testing.T) {
		b := newFailoverBench(t, eastWestNorth, 3, serviceEndpoint("api", false), withConflict(serviceEndpoint("api-mesh", true)))
		b.mirror("api", "west", 0, 3)
		b.mirror("api-mesh", "west", 0, 3)
		b.step(0)
		b.g.Expect(b.step(benchDetect + time.Second).replicas).To(Equal(int32(3)))
		c := b.condition()
		b.g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
		b.g.Expect(c.Reason).To(Equal(polykubev1alpha1.ReasonServiceEndpointMissing))
		b.g.Expect(c.Message).To(And(ContainSubstring("api (global: false)"), ContainSubstring("api-mesh (Conflict)")))
	})
}

// Slices mirrored from a source that is no target (Cilium's cluster.name differs from the
// ClusterMember name) are no view of the targets, and the condition names them.
func TestReconciler_failover_SourcesThatAreNoTargetsAreNamed(t *testing.T) {
	b := newFailoverBench(t, eastWestNorth, 3, serviceEndpoint("api", true))
	b.mirror("api", "kind-west", 3, 3)
	b.mirror("api", "kind-north", 3, 3)
	b.step(0)
	b.g.Expect(b.step(benchDetect+time.Second).replicas).To(Equal(int32(3)), "no surge for a misnamed mesh")
	c := b.condition()
	b.g.Expect(c.Reason).To(Equal(polykubev1alpha1.ReasonNoMeshView))
	b.g.Expect(c.Message).To(ContainSubstring("kind-north, kind-west"))
	b.g.Expect(c.Message).To(ContainSubstring("is Cilium's cluster.name the ClusterMember name?"))

	// With a view of a target, an unknown source is still named.
	b.mirror("api", "west", 3, 3)
	b.step(time.Second)
	b.g.Expect(b.condition().Message).To(ContainSubstring("kind-north, kind-west"))
}

// A peer's ready count that moves above its share changes no decision, so no status field.
func TestReconciler_failover_CountsAboveTheShareChangeNoStatus(t *testing.T) {
	b := newFailoverBench(t, eastWestNorth, 2, serviceEndpoint("api", true))
	b.mirror("api", "west", 3, 4)
	b.mirror("api", "north", 2, 2)
	b.step(0)
	before := b.wl.Status.DeepCopy()
	for i := range 10 {
		b.mirror("api", "west", 3+(i+1)%2, 4)
		b.step(time.Second)
		b.g.Expect(b.wl.Status).To(Equal(*before), "flip %d", i+1)
	}
}

// A fleet of 511 members with 32-character names: every condition message at most 32 KiB (the
// API's limit), every event note at most 1 KiB (longer ones are refused), and the failover
// status bounded whatever the peers do.
func TestReconciler_failover_BoundedAt511Peers(t *testing.T) {
	const maxCondition, maxNote, maxFailoverStatus = 32 * 1024, 1024, 96 * 1024
	clusters := make([]string, 511)
	for i := range clusters {
		clusters[i] = fmt.Sprintf("cluster-%03d-abcdefghijklmnopqrst", i)
	}
	if len(clusters[0]) != 32 {
		t.Fatalf("names are %d characters", len(clusters[0]))
	}
	b := newFailoverBench(t, clusters, 3, serviceEndpoint("api", true))
	checkSizes := func(when string) {
		t.Helper()
		for _, c := range b.wl.Status.Conditions {
			if len(c.Message) > maxCondition {
				t.Errorf("%s: condition %s/%s has a message of %d bytes, over %d", when, c.Type, c.Reason, len(c.Message), maxCondition)
			}
		}
		for _, n := range b.notes {
			if len(n) > maxNote {
				t.Errorf("%s: an event note has %d bytes, over %d: %.200s...", when, len(n), maxNote, n)
			}
		}
		if fs := b.wl.Status.Failover; fs != nil {
			raw, err := json.Marshal(fs)
			b.g.Expect(err).NotTo(HaveOccurred())
			if len(raw) > maxFailoverStatus {
				t.Errorf("%s: status.failover is %d bytes, over %d", when, len(raw), maxFailoverStatus)
			}
			t.Logf("%s: status.failover is %d bytes, %s is %d bytes", when, len(raw), b.condition().Reason, len(b.condition().Message))
		}
	}

	// No view, with every peer mirrored under another name.
	for _, c := range clusters[1:] {
		b.mirror("api", "kind-"+c, 3, 3)
	}
	b.step(0)
	checkSizes("no view, 510 unknown sources")
	for _, c := range clusters[1:] {
		b.unmirror("api", "kind-"+c)
	}

	// Every peer down: first pending, then absorbed, then every peer recovers by a different
	// amount, pending the other way.
	for _, c := range clusters[1:] {
		b.mirror("api", c, 0, 3)
	}
	b.step(time.Second)
	checkSizes("510 deficits pending")
	b.step(benchDetect)
	b.g.Expect(b.condition().Reason).To(Equal(polykubev1alpha1.ReasonFailoverActive))
	checkSizes("510 deficits absorbed")
	for i, c := range clusters[1:] {
		b.mirror("api", c, i%3, 3)
	}
	b.step(time.Second)
	checkSizes("510 deficits absorbed, 340 falls pending")
	for _, c := range clusters[1:] {
		b.mirror("api", c, 3, 3)
	}
	b.step(time.Second)
	b.step(benchReturn)
	b.step(benchReturn) // the falls seen before the last recovery took their own wait
	b.g.Expect(b.condition().Reason).To(Equal(polykubev1alpha1.ReasonSucceeded))
	b.g.Expect(b.notes).To(HaveLen(2), "FailoverStarted, FailoverEnded")
	checkSizes("every peer back")

	// The Allocated condition lists every target's share.
	bounds := make(placement.BoundsAllocation, len(clusters))
	for i, c := range clusters {
		bounds[i] = placement.Bounds{Cluster: c, Min: 1000, Max: 100000}
	}
	for _, msg := range []string{allocationMessage(b.alloc, nil), allocationMessage(b.alloc, bounds)} {
		if len(msg) > maxCondition {
			t.Errorf("the Allocated message has %d bytes, over %d", len(msg), maxCondition)
		}
	}
}
