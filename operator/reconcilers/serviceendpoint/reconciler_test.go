package serviceendpoint

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/rectest"
)

const localCluster = "se-local"

// namespace creates a namespace named prefix plus a random suffix: without a controller-manager
// a deleted namespace stays Terminating, so names are never reused (go test -count=N).
func namespace(t *testing.T, c client.Client, prefix string) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: prefix + "-"}}
	rectest.Create(t, c, ns)
	return ns.Name
}

func newServiceEndpoint(ns, name, workload string, mutate ...func(*polykubev1alpha1.ServiceEndpoint)) *polykubev1alpha1.ServiceEndpoint {
	se := &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: polykubev1alpha1.ServiceEndpointSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: workload},
			Ports: []polykubev1alpha1.WorkloadPort{
				{Name: "http", Port: 80, TargetPort: 8080},
				{Name: "metrics", Port: 9090},
			},
		},
	}
	for _, m := range mutate {
		m(se)
	}
	return se
}

// newWorkload is a Static Workload with the given replicas per cluster.
func newWorkload(ns, name string, replicas map[string]int32) *polykubev1alpha1.Workload {
	wl := &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: polykubev1alpha1.WorkloadSpec{
			Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyStatic},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/app:v1"}},
			}},
		},
	}
	for cluster, n := range replicas {
		wl.Spec.Distribution.Targets = append(wl.Spec.Distribution.Targets,
			polykubev1alpha1.DistributionTarget{ClusterRef: cluster, Replicas: ptr.To(n)})
	}
	return wl
}

func getService(g Gomega, c client.Client, ns, name string) *corev1.Service {
	svc := &corev1.Service{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, svc)).To(Succeed())
	return svc
}

func getServiceEndpoint(g Gomega, c client.Client, ns, name string) *polykubev1alpha1.ServiceEndpoint {
	se := &polykubev1alpha1.ServiceEndpoint{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, se)).To(Succeed())
	return se
}

// readyOf returns the Ready condition once it reflects the current generation.
func readyOf(g Gomega, se *polykubev1alpha1.ServiceEndpoint) metav1.Condition {
	ready := meta.FindStatusCondition(se.Status.Conditions, polykubev1alpha1.ReadyCondition)
	g.Expect(ready).NotTo(BeNil(), "ServiceEndpoint %s/%s has no Ready condition yet", se.Namespace, se.Name)
	g.Expect(ready.ObservedGeneration).To(Equal(se.Generation))
	g.Expect(se.Status.ObservedGeneration).To(Equal(se.Generation))
	return *ready
}

// expectManagedService checks every field of the Service the ServiceEndpoint asks for.
func expectManagedService(g Gomega, svc *corev1.Service, se *polykubev1alpha1.ServiceEndpoint, global, shared, affinity string) {
	g.Expect(svc.Labels).To(HaveKeyWithValue("app.kubernetes.io/managed-by", "polykube"))
	g.Expect(svc.Labels).To(HaveKeyWithValue("polykube.kismet.io/service-endpoint", se.Name))
	g.Expect(svc.Labels).To(HaveKeyWithValue("polykube.kismet.io/cluster", localCluster))
	g.Expect(svc.Annotations).To(HaveKeyWithValue("service.cilium.io/global", global))
	g.Expect(svc.Annotations).To(HaveKeyWithValue("service.cilium.io/shared", shared))
	if affinity == "none" {
		// Cilium's default: left unannotated.
		g.Expect(svc.Annotations).NotTo(HaveKey("service.cilium.io/affinity"))
	} else {
		g.Expect(svc.Annotations).To(HaveKeyWithValue("service.cilium.io/affinity", affinity))
	}
	g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(svc.Spec.ClusterIP).NotTo(BeEmpty())
	g.Expect(svc.Spec.Selector).To(Equal(map[string]string{"polykube.kismet.io/workload": se.Spec.WorkloadRef.Name}))
	g.Expect(svc.Spec.Ports).To(HaveLen(2))
	g.Expect(svc.Spec.Ports[0]).To(And(
		HaveField("Name", "http"), HaveField("Port", int32(80)), HaveField("TargetPort", intstr.FromInt32(8080)), HaveField("Protocol", corev1.ProtocolTCP)))
	g.Expect(svc.Spec.Ports[1]).To(And(
		HaveField("Name", "metrics"), HaveField("Port", int32(9090)), HaveField("TargetPort", intstr.FromInt32(9090))))
	g.Expect(metav1.IsControlledBy(svc, se)).To(BeTrue(), "the Service must be controlled by the ServiceEndpoint: %v", svc.OwnerReferences)
}

// TestReconciler_ServiceEndpoint_ServiceInEveryCluster checks that the annotated Service exists
// whatever this cluster's share of the Workload: some replicas, zero replicas, not a target at
// all, or no Workload. Each case runs in its own namespace.
func TestReconciler_ServiceEndpoint_ServiceInEveryCluster(t *testing.T) {
	c, _ := startReconcilers(t, localCluster)
	tests := []struct {
		name          string
		workload      map[string]int32 // nil: no Workload
		wantReason    string
		wantInMessage string
	}{
		{name: "local replicas", workload: map[string]int32{localCluster: 2, "other": 1},
			wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: "0 ready local endpoints"},
		{name: "zero local replicas", workload: map[string]int32{localCluster: 0, "other": 3},
			wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: "runs 0 replicas"},
		{name: "not targeted", workload: map[string]int32{"other": 3},
			wantReason: polykubev1alpha1.ReasonNotTargeted, wantInMessage: `does not target cluster "se-local"`},
		{name: "no Workload",
			wantReason: polykubev1alpha1.ReasonWorkloadNotFound, wantInMessage: `Workload "api" does not exist`},
	}
	// Namespaces belong to the parent test: without a controller-manager a deleted namespace
	// stays Terminating, and the last subtest reuses one.
	var namespaces []string
	for _, prefix := range []string{"se-some", "se-zero", "se-untargeted", "se-noworkload"} {
		namespaces = append(namespaces, namespace(t, c, prefix))
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			ns := namespaces[i]
			if tc.workload != nil {
				rectest.Create(t, c, newWorkload(ns, "api", tc.workload))
			}
			se := newServiceEndpoint(ns, "api-global", "api")
			rectest.Create(t, c, se)

			g.Eventually(func(g Gomega) {
				got := getServiceEndpoint(g, c, ns, "api-global")
				ready := readyOf(g, got)
				g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
				g.Expect(ready.Reason).To(Equal(tc.wantReason), ready.Message)
				g.Expect(ready.Message).To(ContainSubstring(tc.wantInMessage))
				g.Expect(got.Status.ServiceName).To(Equal("api-global"))
				g.Expect(got.Status.LocalReadyEndpoints).To(BeZero())
				expectManagedService(g, getService(g, c, ns, "api-global"), got, "true", "true", "none")
			}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
		})
	}

	t.Run("the Workload appears later", func(t *testing.T) {
		g := NewWithT(t)
		ns := namespaces[3]
		rectest.Create(t, c, newServiceEndpoint(ns, "late", "late"))
		g.Eventually(func(g Gomega) {
			ready := readyOf(g, getServiceEndpoint(g, c, ns, "late"))
			g.Expect(ready.Reason).To(Equal(polykubev1alpha1.ReasonWorkloadNotFound), ready.Message)
		}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
		rectest.Create(t, c, newWorkload(ns, "late", map[string]int32{localCluster: 1}))
		g.Eventually(func(g Gomega) {
			ready := readyOf(g, getServiceEndpoint(g, c, ns, "late"))
			g.Expect(ready.Reason).To(Equal(polykubev1alpha1.ReasonSucceeded), ready.Message)
		}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	})
}

// TestReconciler_ServiceEndpoint_SpecChangeAndSteadyState checks that a spec change updates the
// annotations, that a hand edit of an owned field is undone while others' labels are kept, and
// that nothing is written when nothing changed.
func TestReconciler_ServiceEndpoint_SpecChangeAndSteadyState(t *testing.T) {
	c, fx := startReconcilers(t, localCluster)
	g := NewWithT(t)
	ns := namespace(t, c, "se-spec")
	rectest.Create(t, c, newWorkload(ns, "api", map[string]int32{localCluster: 1}))
	rectest.Create(t, c, newServiceEndpoint(ns, "api", "api", func(se *polykubev1alpha1.ServiceEndpoint) { se.Spec.Affinity = "local" }))
	g.Eventually(func(g Gomega) {
		se := getServiceEndpoint(g, c, ns, "api")
		g.Expect(readyOf(g, se).Status).To(Equal(metav1.ConditionTrue))
		expectManagedService(g, getService(g, c, ns, "api"), se, "true", "true", "local")
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())

	// Spec change: affinity remote, not shared.
	se := getServiceEndpoint(g, c, ns, "api")
	patched := se.DeepCopy()
	patched.Spec.Affinity = polykubev1alpha1.AffinityRemote
	patched.Spec.Shared = ptr.To(false)
	g.Expect(c.Patch(context.Background(), patched, client.MergeFrom(se))).To(Succeed())
	g.Eventually(func(g Gomega) {
		se := getServiceEndpoint(g, c, ns, "api")
		ready := readyOf(g, se)
		g.Expect(ready.Message).To(ContainSubstring("shared=false, affinity=remote"))
		expectManagedService(g, getService(g, c, ns, "api"), se, "true", "false", "remote")
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())

	// A hand edit of an owned annotation is undone; a label someone else added stays.
	svc := getService(g, c, ns, "api")
	edited := svc.DeepCopy()
	edited.Annotations["service.cilium.io/global"] = "false"
	edited.Labels["team"] = "payments"
	g.Expect(c.Patch(context.Background(), edited, client.MergeFrom(svc))).To(Succeed())
	g.Eventually(func(g Gomega) {
		svc := getService(g, c, ns, "api")
		g.Expect(svc.Annotations).To(HaveKeyWithValue("service.cilium.io/global", "true"))
		g.Expect(svc.Labels).To(HaveKeyWithValue("team", "payments"))
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())

	// Steady state: a reconcile caused by a metadata change of the ServiceEndpoint writes neither
	// the Service nor the status.
	writes := fx.WriteCount()
	se = getServiceEndpoint(g, c, ns, "api")
	touched := se.DeepCopy()
	touched.Annotations = map[string]string{"test/touch": "1"}
	g.Expect(c.Patch(context.Background(), touched, client.MergeFrom(se))).To(Succeed())
	svcVersion := getService(g, c, ns, "api").ResourceVersion
	g.Consistently(func(g Gomega) {
		g.Expect(getServiceEndpoint(g, c, ns, "api").ResourceVersion).To(Equal(touched.ResourceVersion), "the ServiceEndpoint was written in steady state")
		g.Expect(getService(g, c, ns, "api").ResourceVersion).To(Equal(svcVersion), "the Service was written in steady state")
		g.Expect(fx.WriteCount()).To(Equal(writes), "the reconciler sent write requests in steady state")
	}).WithTimeout(quietPeriod).WithPolling(waitInterval).Should(Succeed())

	// Healthy all along: no events.
	g.Expect(fx.Events()).To(BeEmpty())
}

// TestReconciler_ServiceEndpoint_ForeignServiceIsLeftAlone checks that a Service the
// ServiceEndpoint did not create is neither adopted nor changed, that Ready says who owns it,
// and that the ServiceEndpoint takes over the name once that Service is gone.
func TestReconciler_ServiceEndpoint_ForeignServiceIsLeftAlone(t *testing.T) {
	c, fx := startReconcilers(t, localCluster)
	g := NewWithT(t)
	ns := namespace(t, c, "se-conflict")
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy", Labels: map[string]string{"app.kubernetes.io/managed-by": "Helm"}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "legacy"},
			Ports:    []corev1.ServicePort{{Name: "http", Port: 8000}},
		},
	}
	g.Expect(c.Create(context.Background(), foreign)).To(Succeed())
	foreignVersion := foreign.ResourceVersion
	rectest.Create(t, c, newServiceEndpoint(ns, "legacy", "api"))

	g.Eventually(func(g Gomega) {
		se := getServiceEndpoint(g, c, ns, "legacy")
		ready := readyOf(g, se)
		g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
		g.Expect(ready.Reason).To(Equal(polykubev1alpha1.ReasonConflict))
		g.Expect(ready.Message).To(ContainSubstring("Service " + ns + "/legacy exists"))
		g.Expect(ready.Message).To(ContainSubstring("app.kubernetes.io/managed-by=Helm"))
		g.Expect(se.Status.ServiceName).To(BeEmpty())
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	g.Eventually(func() int { return fx.CountEvents("Warning Conflict ") }).
		WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Equal(1), "events: %v", fx.Events())
	g.Consistently(func(g Gomega) {
		svc := getService(g, c, ns, "legacy")
		g.Expect(svc.ResourceVersion).To(Equal(foreignVersion), "the foreign Service was changed")
		g.Expect(svc.OwnerReferences).To(BeEmpty())
		g.Expect(svc.Annotations).NotTo(HaveKey("service.cilium.io/global"))
	}).WithTimeout(quietPeriod).WithPolling(waitInterval).Should(Succeed())
	g.Expect(fx.CountEvents("Warning Conflict ")).To(Equal(1), "one event per transition: %v", fx.Events())

	// Once the foreign Service is gone, the ServiceEndpoint creates its own.
	g.Expect(c.Delete(context.Background(), foreign)).To(Succeed())
	g.Eventually(func(g Gomega) {
		se := getServiceEndpoint(g, c, ns, "legacy")
		ready := readyOf(g, se)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		g.Expect(ready.Reason).To(Equal(polykubev1alpha1.ReasonWorkloadNotFound))
		expectManagedService(g, getService(g, c, ns, "legacy"), se, "true", "true", "none")
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	g.Eventually(func() int { return fx.CountEvents("Normal WorkloadNotFound ") }).
		WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Equal(1), "events: %v", fx.Events())
}

// TestReconciler_ServiceEndpoint_CountsLocalReadyEndpoints feeds EndpointSlices by hand (there is
// no endpointslice controller without a controller-manager) and expects the local ready count.
func TestReconciler_ServiceEndpoint_CountsLocalReadyEndpoints(t *testing.T) {
	c, _ := startReconcilers(t, localCluster)
	g := NewWithT(t)
	ns := namespace(t, c, "se-endpoints")
	rectest.Create(t, c, newWorkload(ns, "api", map[string]int32{localCluster: 3}))
	rectest.Create(t, c, newServiceEndpoint(ns, "api", "api"))

	endpoint := func(ip string, ready bool) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{
			Addresses:  []string{ip},
			Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
			TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "api-" + ip},
		}
	}
	local := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-local", Labels: map[string]string{
			discoveryv1.LabelServiceName: "api", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{endpoint("10.1.0.1", true), endpoint("10.1.0.2", true), endpoint("10.1.0.3", false)},
	}
	remote := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-remote", Labels: map[string]string{
			discoveryv1.LabelServiceName: "api", discoveryv1.LabelManagedBy: "endpointslice-mesh-controller.cilium.io",
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.2.0.1"}}, {Addresses: []string{"10.2.0.2"}}},
	}
	other := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: ns, Name: "unrelated", Labels: map[string]string{discoveryv1.LabelServiceName: "unrelated"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.3.0.1"}}},
	}
	for _, s := range []*discoveryv1.EndpointSlice{local, remote, other} {
		rectest.Create(t, c, s)
	}

	localReady := func(g Gomega) int32 {
		se := getServiceEndpoint(g, c, ns, "api")
		g.Expect(readyOf(g, se).Status).To(Equal(metav1.ConditionTrue))
		return se.Status.LocalReadyEndpoints
	}
	g.Eventually(localReady).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Equal(int32(2)))
	g.Eventually(func(g Gomega) string {
		return readyOf(g, getServiceEndpoint(g, c, ns, "api")).Message
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(ContainSubstring("2 ready local endpoints"))

	// The third pod becomes ready.
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(local), local)).To(Succeed())
	local.Endpoints[2].Conditions.Ready = ptr.To(true)
	g.Expect(c.Update(context.Background(), local)).To(Succeed())
	g.Eventually(localReady).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Equal(int32(3)))
}
