package workload_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
	wlreconciler "github.com/polykube/polykube/operator/reconcilers/workload"
	"github.com/polykube/polykube/placement"
)

var cpu70 = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
	Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](70)},
}}}

// autoscaledWorkload is a MultiCloudWeighted Workload over east (weight 2) and west (weight 1)
// between 3 and 9 replicas in all: east runs 2..6, west 1..3.
func autoscaledWorkload(ns, name string) *polykubev1alpha1.Workload {
	w := workload(ns, name, nil)
	w.Spec.Distribution = polykubev1alpha1.Distribution{
		Strategy: polykubev1alpha1.StrategyMultiCloudWeighted,
		Targets: []polykubev1alpha1.DistributionTarget{
			{ClusterRef: east, Weight: ptr.To[int32](2)},
			{ClusterRef: "west", Weight: ptr.To[int32](1)},
		},
	}
	w.Spec.Autoscaling = &polykubev1alpha1.Autoscaling{
		MinReplicas: ptr.To[int32](3), MaxReplicas: ptr.To[int32](9), Metrics: cpu70,
		Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To[int32](120)}},
	}
	return w
}

func getHPA(g Gomega, c client.Client, ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	g.Expect(c.Get(context.Background(), key(ns, name), h)).To(Succeed())
	return h
}

// scaleByHand scales the Deployment through its scale subresource, as an HPA does.
func scaleByHand(t *testing.T, c client.Client, ns, name string, replicas int32) {
	t.Helper()
	ctx := context.Background()
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	Eventually(func(g Gomega) {
		scale := &autoscalingv1.Scale{}
		g.Expect(c.SubResource("scale").Get(ctx, d, scale)).To(Succeed())
		scale.Spec.Replicas = replicas
		g.Expect(c.SubResource("scale").Update(ctx, d, client.WithSubResourceBody(scale))).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// reconcileNow runs one reconcile of the Workload synchronously, beside the running operator,
// with a client that reads the API server: "every reconcile" made concrete.
func reconcileNow(t *testing.T, c client.Client, ns, name string) {
	t.Helper()
	r := &wlreconciler.Reconciler{Client: c, Scheme: c.Scheme(), ClusterName: east}
	Eventually(func() error {
		_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: key(ns, name)})
		return err
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// autoscalingStatus waits until the Workload's status reflects its generation and returns it.
func autoscalingStatus(g Gomega, c client.Client, ns, name string) polykubev1alpha1.WorkloadStatus {
	w := &polykubev1alpha1.Workload{}
	g.Expect(c.Get(context.Background(), key(ns, name), w)).To(Succeed())
	g.Expect(w.Status.ObservedGeneration).To(Equal(w.Generation))
	return w.Status
}

func TestReconciler_Autoscaling_TheHPAOwnsTheReplicas(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "autoscale")
	startOperator(t, east)
	Expect(c.Create(ctx, autoscaledWorkload(ns, "web"))).To(Succeed())

	// The HPA: this cluster's share of 3..9 by weight 2:1, owned like the Deployment.
	var hpa *autoscalingv2.HorizontalPodAutoscaler
	Eventually(func(g Gomega) { hpa = getHPA(g, c, ns, "web") }).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	wl := &polykubev1alpha1.Workload{}
	Expect(c.Get(ctx, key(ns, "web"), wl)).To(Succeed())
	Expect(hpa.Spec.ScaleTargetRef).To(Equal(autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}))
	Expect(hpa.Spec.MinReplicas).To(HaveValue(Equal(int32(2))))
	Expect(hpa.Spec.MaxReplicas).To(Equal(int32(6)))
	Expect(hpa.Spec.Metrics).To(Equal(cpu70))
	Expect(hpa.Spec.Behavior.ScaleDown.StabilizationWindowSeconds).To(HaveValue(Equal(int32(120))))
	Expect(hpa.OwnerReferences).To(ConsistOf(metav1.OwnerReference{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload",
		Name: "web", UID: wl.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}))
	Expect(hpa.Labels).To(HaveKeyWithValue(polykubev1alpha1.ClusterLabel, east))

	// The Deployment starts at the minimum; the status reports this cluster's bounds and a digest
	// of every target's floor (decision 0013).
	Expect(*getDeployment(NewWithT(t), c, ns, "web").Spec.Replicas).To(Equal(int32(2)))
	Eventually(func(g Gomega) {
		st := autoscalingStatus(g, c, ns, "web")
		g.Expect(st.Autoscaling).To(Equal(&polykubev1alpha1.AutoscalingStatus{MinReplicas: 2, MaxReplicas: 6, CurrentReplicas: 2}))
		g.Expect(st.Targets).To(BeEmpty())
		g.Expect(st.Local.MinReplicas).To(HaveValue(Equal(int32(2))))
		g.Expect(st.Local.MaxReplicas).To(HaveValue(Equal(int32(6))))
		g.Expect(st.Local.CurrentReplicas).To(HaveValue(Equal(int32(2))))
		g.Expect(st.Allocation).To(Equal(&polykubev1alpha1.AllocationDigest{
			Digest:  placement.AllocationDigest(placement.Allocation{{Cluster: east, Replicas: 2}, {Cluster: "west", Replicas: 1}}),
			Targets: 2, TargetsWithReplicas: 2,
		}))
		allocated := meta.FindStatusCondition(st.Conditions, polykubev1alpha1.AllocatedCondition)
		g.Expect(allocated.Message).To(ContainSubstring("east=2..6, west=1..3"))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// An HPA scales it up within range: the operator leaves it, reports it, and calls it ready
	// once the Deployment has those replicas ready (desired = current).
	scaleByHand(t, c, ns, "web", 5)
	setDeploymentStatus(t, c, ns, "web", 5)
	eventuallyReady(t, c, ns, "web", metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
	Eventually(func(g Gomega) {
		st := autoscalingStatus(g, c, ns, "web")
		g.Expect(st.Autoscaling.CurrentReplicas).To(Equal(int32(5)))
		g.Expect(st.DesiredReplicas).To(Equal(int32(5)))
		g.Expect(st.ReadyReplicas).To(Equal(int32(5)))
		g.Expect(st.Local.DesiredReplicas).To(Equal(int32(2)), "the computed floor, the same in every cluster")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// A reconcile, and a change of the template (a new generation, a rollout) keep the HPA's count.
	reconcileNow(t, c, ns, "web")
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key(ns, "web"), wl)).To(Succeed())
		wl.Spec.Template.Annotations = map[string]string{"example.com/rev": "2"}
		g.Expect(c.Update(ctx, wl)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Eventually(func(g Gomega) {
		d := getDeployment(g, c, ns, "web")
		g.Expect(d.Spec.Template.Annotations).To(HaveKeyWithValue("example.com/rev", "2"))
		autoscalingStatus(g, c, ns, "web")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	reconcileNow(t, c, ns, "web")
	Consistently(func(g Gomega) int32 { return *getDeployment(g, c, ns, "web").Spec.Replicas }).
		WithTimeout(2 * time.Second).WithPolling(poll).Should(Equal(int32(5)))

	// Flux re-applies the manifest as it is in Git: nothing changes, the HPA's count stays.
	fromGit := autoscaledWorkload(ns, "web")
	fromGit.Spec.Template.Annotations = map[string]string{"example.com/rev": "2"}
	fromGit.TypeMeta = metav1.TypeMeta{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload"}
	Expect(c.Patch(ctx, fromGit, client.Apply, client.FieldOwner("kustomize-controller"), client.ForceOwnership)).To(Succeed())
	reconcileNow(t, c, ns, "web")
	Expect(*getDeployment(NewWithT(t), c, ns, "web").Spec.Replicas).To(Equal(int32(5)))

	// A hand edit of the HPA's bounds is undone (and counted as drift); the replicas stay.
	drift := map[string]string{"kind": "HorizontalPodAutoscaler", "field": "spec"}
	driftBefore := counter(t, "polykube_drift_reverted_total", drift)
	h := getHPA(NewWithT(t), c, ns, "web")
	edited := h.DeepCopy()
	edited.Spec.MaxReplicas = 100
	Expect(c.Patch(ctx, edited, client.MergeFrom(h))).To(Succeed())
	Eventually(func(g Gomega) int32 { return getHPA(g, c, ns, "web").Spec.MaxReplicas }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal(int32(6)))
	Eventually(func() float64 { return counter(t, "polykube_drift_reverted_total", drift) }).WithTimeout(timeout).WithPolling(poll).
		Should(BeNumerically(">=", driftBefore+1), "polykube_drift_reverted_total{kind=HorizontalPodAutoscaler}")
	Expect(*getDeployment(NewWithT(t), c, ns, "web").Spec.Replicas).To(Equal(int32(5)))
}

func TestReconciler_Autoscaling_HPADeletedByHand_RecreatedReplicasKept(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "autoscale-del")
	startOperator(t, east)
	Expect(c.Create(ctx, autoscaledWorkload(ns, "web"))).To(Succeed())
	var first *autoscalingv2.HorizontalPodAutoscaler
	Eventually(func(g Gomega) { first = getHPA(g, c, ns, "web") }).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	scaleByHand(t, c, ns, "web", 4)
	Eventually(func(g Gomega) {
		g.Expect(autoscalingStatus(g, c, ns, "web").Autoscaling.CurrentReplicas).To(Equal(int32(4)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	Expect(c.Delete(ctx, first)).To(Succeed())
	Eventually(func(g Gomega) {
		h := getHPA(g, c, ns, "web")
		g.Expect(h.UID).NotTo(Equal(first.UID), "a new HPA")
		g.Expect(h.Spec.MinReplicas).To(HaveValue(Equal(int32(2))))
		g.Expect(h.Spec.MaxReplicas).To(Equal(int32(6)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	reconcileNow(t, c, ns, "web")
	Expect(*getDeployment(NewWithT(t), c, ns, "web").Spec.Replicas).To(Equal(int32(4)), "not reset to the minimum")
}

func TestReconciler_Autoscaling_Removed_HPADeletedReplicasManagedAgain(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "autoscale-off")
	startOperator(t, east)
	Expect(c.Create(ctx, autoscaledWorkload(ns, "web"))).To(Succeed())
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	Eventually(isNotFound(c, hpa)).WithTimeout(timeout).WithPolling(poll).Should(BeFalse())
	scaleByHand(t, c, ns, "web", 6)

	// Back to a fixed total of 6 split 2:1: east runs 4, the HPA goes.
	wl := &polykubev1alpha1.Workload{}
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key(ns, "web"), wl)).To(Succeed())
		wl.Spec.Autoscaling = nil
		wl.Spec.Distribution.Replicas = ptr.To[int32](6)
		g.Expect(c.Update(ctx, wl)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Eventually(isNotFound(c, hpa)).WithTimeout(timeout).WithPolling(poll).Should(BeTrue())
	Eventually(func(g Gomega) {
		g.Expect(*getDeployment(g, c, ns, "web").Spec.Replicas).To(Equal(int32(4)))
		st := autoscalingStatus(g, c, ns, "web")
		g.Expect(st.Autoscaling).To(BeNil())
		g.Expect(st.DesiredReplicas).To(Equal(int32(4)))
		g.Expect(st.Local.MinReplicas).To(BeNil())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())

	// And replicas are managed again: a hand scale is reverted.
	scaleByHand(t, c, ns, "web", 9)
	Eventually(func(g Gomega) int32 { return *getDeployment(g, c, ns, "web").Spec.Replicas }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal(int32(4)))
}

// A cluster whose maximum is 0 runs no HPA and no replicas; once it gets a share, its HPA is
// created and its Deployment lifted from 0 to the minimum (an HPA does not scale from zero).
func TestReconciler_Autoscaling_ZeroMaximum_NoHPAUntilAShare(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "autoscale-zero")
	startOperator(t, east)
	wl := autoscaledWorkload(ns, "web")
	wl.Spec.Distribution.Targets[0].Weight = ptr.To[int32](0)
	Expect(c.Create(ctx, wl)).To(Succeed())

	Eventually(func(g Gomega) {
		st := autoscalingStatus(g, c, ns, "web")
		g.Expect(st.Autoscaling).To(Equal(&polykubev1alpha1.AutoscalingStatus{}))
		g.Expect(*getDeployment(g, c, ns, "web").Spec.Replicas).To(BeZero())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	hpa := &autoscalingv2.HorizontalPodAutoscaler{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}}
	Expect(isNotFound(c, hpa)()).To(BeTrue())

	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key(ns, "web"), wl)).To(Succeed())
		wl.Spec.Distribution.Targets[0].Weight = ptr.To[int32](2)
		g.Expect(c.Update(ctx, wl)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(getHPA(g, c, ns, "web").Spec.MaxReplicas).To(Equal(int32(6)))
		g.Expect(*getDeployment(g, c, ns, "web").Spec.Replicas).To(Equal(int32(2)))
		g.Expect(autoscalingStatus(g, c, ns, "web").Autoscaling).To(Equal(&polykubev1alpha1.AutoscalingStatus{MinReplicas: 2, MaxReplicas: 6, CurrentReplicas: 2}))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// Static: each target's replicas is its minimum and maxReplicas its maximum.
func TestReconciler_Autoscaling_StaticPerTarget(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "autoscale-static")
	startOperator(t, east)
	wl := workload(ns, "web", map[string]int32{east: 3, "west": 1})
	wl.Spec.Distribution.Targets[0].MaxReplicas = ptr.To[int32](12)
	wl.Spec.Distribution.Targets[1].MaxReplicas = ptr.To[int32](2)
	wl.Spec.Autoscaling = &polykubev1alpha1.Autoscaling{}
	Expect(c.Create(ctx, wl)).To(Succeed())
	Eventually(func(g Gomega) {
		h := getHPA(g, c, ns, "web")
		g.Expect(h.Spec.MinReplicas).To(HaveValue(Equal(int32(3))))
		g.Expect(h.Spec.MaxReplicas).To(Equal(int32(12)))
		g.Expect(h.Spec.Metrics).To(HaveLen(1), "the API server's default: CPU")
		g.Expect(*getDeployment(g, c, ns, "web").Spec.Replicas).To(Equal(int32(3)))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// An HPA of the Workload's name that Polykube did not make is never adopted: Conflict.
func TestReconciler_Autoscaling_ForeignHPA_Conflict(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "autoscale-foreign")
	foreign := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
			MaxReplicas:    3,
		},
	}
	Expect(c.Create(ctx, foreign)).To(Succeed())
	startOperator(t, east)
	Expect(c.Create(ctx, autoscaledWorkload(ns, "web"))).To(Succeed())
	cond := eventuallyReady(t, c, ns, "web", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)
	Expect(cond.Message).To(ContainSubstring("HorizontalPodAutoscaler " + ns + "/web"))
	now := getHPA(NewWithT(t), c, ns, "web")
	Expect(now.ResourceVersion).To(Equal(foreign.ResourceVersion), "left untouched")
}

// Metrics the CRD's schema accepts but the HPA API refuses are InvalidSpec, not retried.
func TestReconciler_Autoscaling_HPARefused_InvalidSpec(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "autoscale-invalid")
	startOperator(t, east)
	wl := autoscaledWorkload(ns, "web")
	wl.Spec.Autoscaling.Metrics = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
		Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType},
	}}}
	Expect(c.Create(ctx, wl)).To(Succeed())
	// The operators of later tests would log its terminal error again.
	t.Cleanup(func() { _ = c.Delete(context.Background(), wl) })
	cond := eventuallyReady(t, c, ns, "web", metav1.ConditionFalse, polykubev1alpha1.ReasonInvalidSpec)
	Expect(cond.Message).To(ContainSubstring("HorizontalPodAutoscaler"))
	Expect(cond.Message).To(ContainSubstring("fix spec.autoscaling"))
}

// The scale subresource (kubectl scale, or an HPA nobody configured through the Workload) on a
// Workload that is not autoscaled is reverted like any other edit of its replicas.
func TestReconciler_NotAutoscaled_ScaleSubresourceReverted(t *testing.T) {
	c := start(t)
	ns := optest.Namespace(t, c, "scale-revert")
	startOperator(t, east)
	Expect(c.Create(context.Background(), workload(ns, "api", map[string]int32{east: 2}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	scaleByHand(t, c, ns, "api", 7)
	Eventually(func(g Gomega) int32 { return *getDeployment(g, c, ns, "api").Spec.Replicas }).
		WithTimeout(timeout).WithPolling(poll).Should(Equal(int32(2)))
}
