package serviceendpoint

import (
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
)

func serviceEndpoint(name string, mutate ...func(*polykubev1alpha1.ServiceEndpoint)) *polykubev1alpha1.ServiceEndpoint {
	se := &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "shop"},
		Spec: polykubev1alpha1.ServiceEndpointSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "checkout"},
			Ports:       []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80, TargetPort: 8080}},
		},
	}
	for _, m := range mutate {
		m(se)
	}
	return se
}

func TestSettingsOf(t *testing.T) {
	tests := []struct {
		name string
		spec polykubev1alpha1.ServiceEndpointSpec
		want Settings
		ann  map[string]string
	}{
		{
			// Cilium 1.20 reads an absent affinity annotation as none: it is left out.
			name: "defaults: global, shared, affinity none",
			want: Settings{Global: true, Shared: true, Affinity: "none"},
			ann:  map[string]string{GlobalAnnotation: "true", SharedAnnotation: "true"},
		},
		{
			name: "everything set",
			spec: polykubev1alpha1.ServiceEndpointSpec{Global: ptr.To(false), Shared: ptr.To(false), Affinity: "local"},
			want: Settings{Global: false, Shared: false, Affinity: "local"},
			ann:  map[string]string{GlobalAnnotation: "false", SharedAnnotation: "false", AffinityAnnotation: "local"},
		},
		{
			name: "remote affinity, not shared",
			spec: polykubev1alpha1.ServiceEndpointSpec{Shared: ptr.To(false), Affinity: "remote"},
			want: Settings{Global: true, Shared: false, Affinity: "remote"},
			ann:  map[string]string{GlobalAnnotation: "true", SharedAnnotation: "false", AffinityAnnotation: "remote"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			s := SettingsOf(tc.spec)
			g.Expect(s).To(Equal(tc.want))
			g.Expect(s.Annotations()).To(Equal(tc.ann))
		})
	}
}

func TestDesiredService(t *testing.T) {
	g := NewWithT(t)
	se := serviceEndpoint("checkout-global", func(se *polykubev1alpha1.ServiceEndpoint) {
		se.Spec.Affinity = "local"
		se.Spec.Ports = append(se.Spec.Ports, polykubev1alpha1.WorkloadPort{Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP})
	})
	svc := DesiredService(se, "aws-eu")
	g.Expect(svc.Name).To(Equal("checkout-global"))
	g.Expect(svc.Namespace).To(Equal("shop"))
	g.Expect(svc.Labels).To(Equal(map[string]string{
		"app.kubernetes.io/managed-by":        "polykube",
		"polykube.kismet.io/service-endpoint": "checkout-global",
		"polykube.kismet.io/cluster":          "aws-eu",
	}))
	g.Expect(svc.Annotations).To(Equal(map[string]string{
		"service.cilium.io/global": "true", "service.cilium.io/shared": "true", "service.cilium.io/affinity": "local",
	}))
	g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"polykube.kismet.io/workload": "checkout"}))
	g.Expect(svc.Spec.Ports).To(Equal([]corev1.ServicePort{
		{Name: "http", Protocol: corev1.ProtocolTCP, Port: 80, TargetPort: intstr.FromInt32(8080)},
		{Name: "dns", Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromInt32(53)},
	}))
}

func TestReconciled(t *testing.T) {
	desired := DesiredService(serviceEndpoint("checkout"), "aws-eu")
	// asServed is desired as the API server returns it: with a cluster IP, extra labels and
	// annotations from others, and defaulted fields.
	asServed := func(mutate ...func(*corev1.Service)) *corev1.Service {
		s := desired.DeepCopy()
		s.ResourceVersion = "7"
		s.Labels["team"] = "payments"
		s.Annotations["kubectl.kubernetes.io/last-applied-configuration"] = "{}"
		s.Spec.ClusterIP = "10.96.0.10"
		s.Spec.ClusterIPs = []string{"10.96.0.10"}
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
		for _, m := range mutate {
			m(s)
		}
		return s
	}
	tests := []struct {
		name        string
		existing    *corev1.Service
		wantChanged bool
	}{
		{name: "as desired", existing: asServed()},
		{name: "affinity changed in the spec", existing: asServed(func(s *corev1.Service) { s.Annotations[AffinityAnnotation] = "remote" }), wantChanged: true},
		{name: "affinity none written by an older operator", existing: asServed(func(s *corev1.Service) { s.Annotations[AffinityAnnotation] = "none" }), wantChanged: true},
		{name: "global annotation removed by hand", existing: asServed(func(s *corev1.Service) { delete(s.Annotations, GlobalAnnotation) }), wantChanged: true},
		{name: "cluster label changed", existing: asServed(func(s *corev1.Service) { s.Labels[polykubev1alpha1.ClusterLabel] = "other" }), wantChanged: true},
		{name: "selector widened", existing: asServed(func(s *corev1.Service) { s.Spec.Selector["extra"] = "x" }), wantChanged: true},
		{name: "port changed", existing: asServed(func(s *corev1.Service) { s.Spec.Ports[0].Port = 81 }), wantChanged: true},
		{name: "target port changed", existing: asServed(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromInt32(9090) }), wantChanged: true},
		{name: "port added", existing: asServed(func(s *corev1.Service) {
			s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "x", Port: 1, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(1)})
		}), wantChanged: true},
		{name: "type changed to NodePort", existing: asServed(func(s *corev1.Service) {
			s.Spec.Type = corev1.ServiceTypeNodePort
			s.Spec.Ports[0].NodePort = 30080
		}), wantChanged: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			before := tc.existing.DeepCopy()
			got, changed := Reconciled(tc.existing, desired)
			g.Expect(changed).To(Equal(tc.wantChanged))
			g.Expect(tc.existing).To(Equal(before), "the input must not be modified")
			// What the operator owns matches the spec…
			for k, v := range desired.Labels {
				g.Expect(got.Labels).To(HaveKeyWithValue(k, v))
			}
			for k, v := range desired.Annotations {
				g.Expect(got.Annotations).To(HaveKeyWithValue(k, v))
			}
			// …an annotation of ours the spec no longer asks for is gone (affinity none is
			// Cilium's default when the annotation is absent)…
			for _, k := range []string{GlobalAnnotation, SharedAnnotation, AffinityAnnotation} {
				if _, ok := desired.Annotations[k]; !ok {
					g.Expect(got.Annotations).NotTo(HaveKey(k))
				}
			}
			g.Expect(got.Spec.Type).To(Equal(desired.Spec.Type))
			g.Expect(got.Spec.Selector).To(Equal(desired.Spec.Selector))
			g.Expect(got.Spec.Ports).To(Equal(desired.Spec.Ports))
			// …and what others own is kept.
			g.Expect(got.Labels).To(HaveKeyWithValue("team", "payments"))
			g.Expect(got.Annotations).To(HaveKey("kubectl.kubernetes.io/last-applied-configuration"))
			g.Expect(got.Spec.ClusterIP).To(Equal("10.96.0.10"))
			g.Expect(got.ResourceVersion).To(Equal("7"))
			// A second pass finds nothing to do.
			_, again := Reconciled(got, desired)
			g.Expect(again).To(BeFalse())
		})
	}
}

func TestDescribeOwner(t *testing.T) {
	controller := func(kind, name string) []metav1.OwnerReference {
		return []metav1.OwnerReference{{Kind: kind, Name: name, Controller: ptr.To(true)}}
	}
	tests := []struct {
		name string
		svc  corev1.Service
		want string
	}{
		{
			name: "plain Service",
			want: "it has no controller",
		},
		{
			name: "another controller",
			svc:  corev1.Service{ObjectMeta: metav1.ObjectMeta{OwnerReferences: controller("HelmRelease", "shop")}},
			want: `it is controlled by HelmRelease "shop"`,
		},
		{
			name: "Polykube Workload with ports",
			svc: corev1.Service{ObjectMeta: metav1.ObjectMeta{
				OwnerReferences: controller("Workload", "checkout"),
				Labels:          map[string]string{polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue},
			}},
			want: `it is controlled by Workload "checkout", whose spec.ports create a Service of the same name`,
		},
		{
			name: "labelled by a tool, no controller",
			svc:  corev1.Service{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{polykubev1alpha1.ManagedByLabel: "Helm"}}},
			want: "it is labelled app.kubernetes.io/managed-by=Helm and has no controller",
		},
		{
			name: "a non-controller owner reference does not count",
			svc:  corev1.Service{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "ConfigMap", Name: "x"}}}},
			want: "it has no controller",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(DescribeOwner(&tc.svc)).To(Equal(tc.want))
		})
	}
}

func TestCountReadyEndpoints(t *testing.T) {
	pod := func(uid string) *corev1.ObjectReference {
		return &corev1.ObjectReference{Kind: "Pod", Namespace: "shop", Name: "p-" + uid, UID: types.UID(uid)}
	}
	ep := func(ready *bool, ref *corev1.ObjectReference, addrs ...string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: addrs, Conditions: discoveryv1.EndpointConditions{Ready: ready}, TargetRef: ref}
	}
	slice := func(family discoveryv1.AddressType, managedBy string, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				discoveryv1.LabelServiceName: "checkout", discoveryv1.LabelManagedBy: managedBy,
			}},
			AddressType: family,
			Endpoints:   eps,
		}
	}
	const k8s = "endpointslice-controller.k8s.io"
	yes, no := ptr.To(true), ptr.To(false)
	tests := []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   int32
	}{
		{name: "no slices", want: 0},
		{
			name:   "ready, not ready and unknown (counts as ready)",
			slices: []discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, k8s, ep(yes, pod("a"), "10.0.0.1"), ep(no, pod("b"), "10.0.0.2"), ep(nil, pod("c"), "10.0.0.3"))},
			want:   2,
		},
		{
			name: "spread over two slices",
			slices: []discoveryv1.EndpointSlice{
				slice(discoveryv1.AddressTypeIPv4, k8s, ep(yes, pod("a"), "10.0.0.1")),
				slice(discoveryv1.AddressTypeIPv4, k8s, ep(yes, pod("b"), "10.0.0.2")),
			},
			want: 2,
		},
		{
			name: "dual stack: one pod in an IPv4 and an IPv6 slice counts once",
			slices: []discoveryv1.EndpointSlice{
				slice(discoveryv1.AddressTypeIPv4, k8s, ep(yes, pod("a"), "10.0.0.1")),
				slice(discoveryv1.AddressTypeIPv6, k8s, ep(yes, pod("a"), "fd00::1")),
			},
			want: 1,
		},
		{
			name: "endpoints without a target count by address",
			slices: []discoveryv1.EndpointSlice{slice(discoveryv1.AddressTypeIPv4, "someone",
				ep(yes, nil, "192.168.1.1"), ep(yes, nil, "192.168.1.2"), ep(yes, nil, "192.168.1.1"))},
			want: 2,
		},
		{
			name: "remote backends Cilium mirrors are not local",
			slices: []discoveryv1.EndpointSlice{
				slice(discoveryv1.AddressTypeIPv4, k8s, ep(yes, pod("a"), "10.0.0.1")),
				slice(discoveryv1.AddressTypeIPv4, "endpointslice-mesh-controller.cilium.io", ep(yes, nil, "10.1.0.1"), ep(yes, nil, "10.1.0.2")),
			},
			want: 1,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(CountReadyEndpoints(tc.slices)).To(Equal(tc.want))
		})
	}
}

func TestReadyCondition(t *testing.T) {
	base := func(mutate ...func(*Observation)) Observation {
		o := Observation{
			Service: "shop/checkout", Settings: Settings{Global: true, Shared: true, Affinity: "local"},
			Workload: "checkout", WorkloadFound: true, Targeted: true, LocalReplicas: ptr.To[int32](3),
			Cluster: "aws-eu", ReadyEndpoints: 3,
		}
		for _, m := range mutate {
			m(&o)
		}
		return o
	}
	tests := []struct {
		name          string
		obs           Observation
		wantStatus    metav1.ConditionStatus
		wantReason    string
		wantInMessage []string
		notInMessage  []string
	}{
		{
			name: "in place with local endpoints", obs: base(),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
			wantInMessage: []string{"shop/checkout", "global=true, shared=true, affinity=local", "3 ready local endpoints"},
		},
		{
			name: "targeted with zero replicas", obs: base(func(o *Observation) { o.LocalReplicas = ptr.To[int32](0); o.ReadyEndpoints = 0 }),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
			wantInMessage: []string{"runs 0 replicas", `"aws-eu"`, "through ClusterMesh"},
		},
		{
			name: "not targeted", obs: base(func(o *Observation) { o.Targeted = false; o.LocalReplicas = nil }),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonNotTargeted,
			wantInMessage: []string{`Workload "checkout" does not target cluster "aws-eu"`, "through ClusterMesh"},
		},
		{
			name: "not targeted and not global: no promise of remote backends",
			obs: base(func(o *Observation) {
				o.Targeted = false
				o.Settings.Global = false
			}),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonNotTargeted,
			notInMessage: []string{"ClusterMesh"},
		},
		{
			name: "Workload missing", obs: base(func(o *Observation) { o.WorkloadFound, o.Targeted = false, false }),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonWorkloadNotFound,
			wantInMessage: []string{"shop/checkout is in place", `Workload "checkout" does not exist`},
		},
		{
			name: "conflict wins over a missing Workload",
			obs: base(func(o *Observation) {
				o.WorkloadFound = false
				o.Conflict = `it is controlled by HelmRelease "shop"`
			}),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonConflict,
			wantInMessage: []string{"Service shop/checkout exists", `HelmRelease "shop"`, "never adopts"},
		},
		{
			name: "API error wins over everything",
			obs: base(func(o *Observation) {
				o.Conflict = "x"
				o.Err = errors.New("patch Service shop/checkout: forbidden")
			}),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonReconcileFailed,
			wantInMessage: []string{"forbidden", "retries"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := ReadyCondition(tc.obs)
			g.Expect(c.Type).To(Equal(polykubev1alpha1.ReadyCondition))
			g.Expect(c.Status).To(Equal(tc.wantStatus), c.Message)
			g.Expect(c.Reason).To(Equal(tc.wantReason), c.Message)
			for _, s := range tc.wantInMessage {
				g.Expect(c.Message).To(ContainSubstring(s))
			}
			for _, s := range tc.notInMessage {
				g.Expect(c.Message).NotTo(ContainSubstring(s))
			}
		})
	}
}

func TestIsTransition(t *testing.T) {
	cond := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: polykubev1alpha1.ReadyCondition, Status: s, Reason: reason}
	}
	tests := []struct {
		name     string
		previous []metav1.Condition
		next     metav1.Condition
		want     bool
	}{
		{"first seen, healthy", nil, cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded), false},
		{"first seen, informative", nil, cond(metav1.ConditionTrue, polykubev1alpha1.ReasonWorkloadNotFound), true},
		{"first seen, conflict", nil, cond(metav1.ConditionFalse, polykubev1alpha1.ReasonConflict), true},
		{"unchanged", []metav1.Condition{cond(metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted)}, cond(metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted), false},
		{"reason changed", []metav1.Condition{cond(metav1.ConditionTrue, polykubev1alpha1.ReasonWorkloadNotFound)}, cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded), true},
		{"conflict resolved", []metav1.Condition{cond(metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)}, cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(isTransition(tc.previous, tc.next)).To(Equal(tc.want))
		})
	}
}

// The endpoint-slice sync annotation is added for a failover Workload and removed when failover
// is turned off.
func TestReconciled_SyncEndpointSlicesAnnotation(t *testing.T) {
	g := NewWithT(t)
	plain := DesiredService(serviceEndpoint("checkout"), "aws-eu")
	synced := plain.DeepCopy()
	SyncEndpointSlices(synced)
	g.Expect(synced.Annotations).To(HaveKeyWithValue("service.cilium.io/global-sync-endpoint-slices", "true"))

	out, changed := Reconciled(plain, synced)
	g.Expect(changed).To(BeTrue())
	g.Expect(out.Annotations).To(HaveKeyWithValue("service.cilium.io/global-sync-endpoint-slices", "true"))

	out, changed = Reconciled(out, plain)
	g.Expect(changed).To(BeTrue())
	g.Expect(out.Annotations).NotTo(HaveKey("service.cilium.io/global-sync-endpoint-slices"))
}

// TestLocalSlices_IndexedAndWatched: the count reads this cluster's own slices of a Service
// through LocalSliceIndex, and only their events reconcile: a peer's mirrored slice is neither
// counted nor a reason to reconcile (issue 40: a peer's flap cost a reconcile per flap).
func TestLocalSlices_IndexedAndWatched(t *testing.T) {
	g := NewWithT(t)
	slice := func(labels map[string]string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "s", Labels: labels}}
	}
	local := slice(map[string]string{discoveryv1.LabelServiceName: "checkout"})
	mirrored := slice(map[string]string{discoveryv1.LabelServiceName: "checkout", discoveryv1.LabelManagedBy: meshview.ManagedBy})
	g.Expect(LocalSliceService(local)).To(Equal([]string{"checkout"}))
	g.Expect(LocalSliceService(mirrored)).To(BeEmpty())
	g.Expect(LocalSliceService(slice(nil))).To(BeEmpty(), "a slice of no Service")
	g.Expect(localSlice.Generic(event.GenericEvent{Object: local})).To(BeTrue())
	g.Expect(localSlice.Generic(event.GenericEvent{Object: mirrored})).To(BeFalse())
	g.Expect(notInInitialList.Create(event.CreateEvent{Object: local, IsInInitialList: true})).To(BeFalse(), "every ServiceEndpoint is reconciled on start-up")
	g.Expect(notInInitialList.Create(event.CreateEvent{Object: local})).To(BeTrue())
}
