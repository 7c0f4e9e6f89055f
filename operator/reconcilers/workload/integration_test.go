package workload_test

import (
	"context"
	"os"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/placement"
)

const (
	east    = "east"
	timeout = 30 * time.Second
	poll    = 100 * time.Millisecond
)

var env optest.Env

func TestMain(m *testing.M) {
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

// start returns a client of the shared API server, with the ClusterMembers east and west.
func start(t *testing.T) client.Client {
	t.Helper()
	RegisterTestingT(t) // the tests of this package run one at a time
	_, c := env.Start(t)
	for i, name := range []string{east, "west"} {
		err := c.Create(context.Background(), optest.ClusterMember(name, int32(i+1)))
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create ClusterMember %s: %v", name, err)
		}
	}
	return c
}

func startOperator(t *testing.T, cluster string) *optest.Operator {
	cfg, _ := env.Start(t)
	return optest.StartOperator(t, cfg, cluster, optest.Options{})
}

// workload is a Static Workload with the given replicas per cluster.
func workload(ns, name string, replicas map[string]int32, ports ...polykubev1alpha1.WorkloadPort) *polykubev1alpha1.Workload {
	w := &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: polykubev1alpha1.WorkloadSpec{
			Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyStatic},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/" + name + ":v1"}}},
			},
			Ports: ports,
		},
	}
	setTargets(w, replicas)
	return w
}

func setTargets(w *polykubev1alpha1.Workload, replicas map[string]int32) {
	w.Spec.Distribution.Targets = nil
	for _, cluster := range []string{east, "west", "north", "nowhere"} {
		if r, ok := replicas[cluster]; ok {
			w.Spec.Distribution.Targets = append(w.Spec.Distribution.Targets,
				polykubev1alpha1.DistributionTarget{ClusterRef: cluster, Replicas: ptr.To(r)})
		}
	}
}

// editWorkload changes a Workload as a user would while the operator runs: the operator's status
// writes move the resourceVersion between a Get and an Update, so the edit is read again and
// retried on a conflict (client-go's RetryOnConflict) instead of failing the test at random.
func editWorkload(t *testing.T, c client.Client, k types.NamespacedName, edit func(*polykubev1alpha1.Workload)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		w := &polykubev1alpha1.Workload{}
		if err := c.Get(context.Background(), k, w); err != nil {
			return err
		}
		edit(w)
		return c.Update(context.Background(), w)
	})
	if err != nil {
		t.Fatalf("editing Workload %s: %v", k, err)
	}
}

var httpPort = polykubev1alpha1.WorkloadPort{Name: "http", Port: 80, TargetPort: 8080}

func key(ns, name string) types.NamespacedName {
	return types.NamespacedName{Namespace: ns, Name: name}
}

// readyCondition returns a func for Eventually that yields the Workload's Ready condition.
func readyCondition(g Gomega, c client.Client, ns, name string) *metav1.Condition {
	w := &polykubev1alpha1.Workload{}
	g.Expect(c.Get(context.Background(), key(ns, name), w)).To(Succeed())
	cond := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.ReadyCondition)
	g.Expect(cond).NotTo(BeNil(), "Workload %s/%s has no Ready condition yet", ns, name)
	g.Expect(cond.ObservedGeneration).To(Equal(w.Generation), "Ready condition is for an older generation")
	return cond
}

func eventuallyReady(t *testing.T, c client.Client, ns, name string, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	var cond *metav1.Condition
	Eventually(func(g Gomega) {
		cond = readyCondition(g, c, ns, name)
		g.Expect(cond.Status).To(Equal(status))
		g.Expect(cond.Reason).To(Equal(reason))
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed(), "Workload %s/%s Ready=%s/%s", ns, name, status, reason)
	return cond
}

func getDeployment(g Gomega, c client.Client, ns, name string) *appsv1.Deployment {
	d := &appsv1.Deployment{}
	g.Expect(c.Get(context.Background(), key(ns, name), d)).To(Succeed())
	return d
}

func isNotFound(c client.Client, obj client.Object) func() bool {
	return func() bool {
		return apierrors.IsNotFound(c.Get(context.Background(), client.ObjectKeyFromObject(obj), obj))
	}
}

// setDeploymentStatus plays the Deployment controller, which envtest does not run.
func setDeploymentStatus(t *testing.T, c client.Client, ns, name string, ready int32, conds ...appsv1.DeploymentCondition) {
	t.Helper()
	Eventually(func(g Gomega) {
		d := getDeployment(g, c, ns, name)
		d.Status = appsv1.DeploymentStatus{
			ObservedGeneration: d.Generation, Replicas: *d.Spec.Replicas, UpdatedReplicas: *d.Spec.Replicas,
			ReadyReplicas: ready, AvailableReplicas: ready, Conditions: conds,
		}
		g.Expect(c.Status().Update(context.Background(), d)).To(Succeed())
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

func gauge(t *testing.T, name, ns, workload string) (float64, bool) {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["workload"] == workload {
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

func counter(t *testing.T, name string, want map[string]string) float64 {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatalf("gather metrics: %v", err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	metrics:
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if v, ok := want[l.GetName()]; ok && v != l.GetValue() {
					continue metrics
				}
			}
			return m.GetCounter().GetValue()
		}
	}
	return 0
}

func TestReconciler_Create_DeploymentServiceAndStatus(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "create")
	startOperator(t, east)

	wl := workload(ns, "checkout", map[string]int32{east: 3, "west": 1}, httpPort)
	wl.Spec.Template.Labels["tier"] = "backend"
	Expect(c.Create(ctx, wl)).To(Succeed())

	cond := eventuallyReady(t, c, ns, "checkout", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	Expect(cond.Message).To(ContainSubstring("3 replicas desired"))

	g := NewWithT(t)
	d := getDeployment(g, c, ns, "checkout")
	g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
	wantLabels := map[string]string{
		polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.WorkloadNameLabel: "checkout",
		polykubev1alpha1.ClusterLabel: east,
	}
	g.Expect(d.Labels).To(Equal(wantLabels))
	g.Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{polykubev1alpha1.WorkloadNameLabel: "checkout"}))
	g.Expect(d.Spec.Template.Labels).To(Equal(map[string]string{"app": "checkout", "tier": "backend", polykubev1alpha1.WorkloadNameLabel: "checkout",
		polykubev1alpha1.ClusterLabel: east}))
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.example.com/checkout:v1"))

	// Deleting the Workload garbage-collects the Deployment and Service through this owner
	// reference (envtest runs no garbage collector, so the reference is what is checked).
	g.Expect(c.Get(ctx, key(ns, "checkout"), wl)).To(Succeed())
	wantOwner := metav1.OwnerReference{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload", Name: "checkout",
		UID: wl.UID, Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
	g.Expect(d.OwnerReferences).To(ConsistOf(wantOwner))

	svc := &corev1.Service{}
	g.Expect(c.Get(ctx, key(ns, "checkout"), svc)).To(Succeed())
	g.Expect(svc.Labels).To(Equal(wantLabels))
	g.Expect(svc.OwnerReferences).To(ConsistOf(wantOwner))
	g.Expect(svc.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(svc.Spec.Selector).To(Equal(map[string]string{polykubev1alpha1.WorkloadNameLabel: "checkout"}))
	g.Expect(svc.Spec.Ports).To(HaveLen(1))
	g.Expect(svc.Spec.Ports[0].Port).To(Equal(int32(80)))
	g.Expect(svc.Spec.Ports[0].TargetPort.IntVal).To(Equal(int32(8080)))

	st := wl.Status
	g.Expect(st.Cluster).To(Equal(east))
	g.Expect(st.SpecHash).NotTo(BeEmpty())
	g.Expect(st.ObservedGeneration).To(Equal(wl.Generation))
	g.Expect(st.DesiredReplicas).To(Equal(int32(3)))
	g.Expect(st.Phase).To(Equal(polykubev1alpha1.PhasePending))
	// Decision 0013: this cluster's own entry and a digest of every target's share, no list.
	g.Expect(st.Targets).To(BeEmpty())
	g.Expect(st.Local).NotTo(BeNil())
	g.Expect(st.Local.Cluster).To(Equal(east))
	g.Expect(st.Local.Local).To(BeTrue())
	g.Expect(st.Local.DesiredReplicas).To(Equal(int32(3)))
	g.Expect(st.Local.Phase).To(Equal(polykubev1alpha1.PhasePending))
	g.Expect(st.Local.LastUpdateTime).NotTo(BeNil())
	g.Expect(st.Allocation).To(Equal(&polykubev1alpha1.AllocationDigest{
		Digest:  placement.AllocationDigest(placement.Allocation{{Cluster: east, Replicas: 3}, {Cluster: "west", Replicas: 1}}),
		Targets: 2, TargetsWithReplicas: 2,
	}))
	allocated := meta.FindStatusCondition(st.Conditions, polykubev1alpha1.AllocatedCondition)
	g.Expect(allocated.Status).To(Equal(metav1.ConditionTrue))
	g.Expect(allocated.Message).To(ContainSubstring("east=3, west=1"))

	// The Deployment controller reports progress, then readiness, then a failure.
	setDeploymentStatus(t, c, ns, "checkout", 1)
	eventuallyReady(t, c, ns, "checkout", metav1.ConditionFalse, polykubev1alpha1.ReasonProgressing)
	setDeploymentStatus(t, c, ns, "checkout", 3)
	eventuallyReady(t, c, ns, "checkout", metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
	g.Expect(c.Get(ctx, key(ns, "checkout"), wl)).To(Succeed())
	g.Expect(wl.Status.Phase).To(Equal(polykubev1alpha1.PhaseReady))
	g.Expect(wl.Status.ReadyReplicas).To(Equal(int32(3)))
	g.Expect(*wl.Status.Local.ReadyReplicas).To(Equal(int32(3)))
	g.Expect(wl.Status.Local.LastUpdateTime.Time).To(BeTemporally(">=", st.Local.LastUpdateTime.Time)) // second resolution; table-tested
	Eventually(func() float64 { v, _ := gauge(t, "polykube_workload_ready_replicas", ns, "checkout"); return v }).
		WithTimeout(timeout).Should(Equal(3.0))
	v, ok := gauge(t, "polykube_workload_desired_replicas", ns, "checkout")
	g.Expect(ok).To(BeTrue())
	g.Expect(v).To(Equal(3.0))

	setDeploymentStatus(t, c, ns, "checkout", 2, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"})
	eventuallyReady(t, c, ns, "checkout", metav1.ConditionFalse, polykubev1alpha1.ReasonDegraded)

	// Events carry the reasons of the conditions they report.
	Eventually(func(g Gomega) []string {
		list := &eventsv1.EventList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var reasons []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "Workload" && e.Regarding.Name == "checkout" {
				reasons = append(reasons, e.Reason)
			}
		}
		return reasons
	}).WithTimeout(timeout).Should(And(
		ContainElements(polykubev1alpha1.ReasonSucceeded, polykubev1alpha1.ReasonDegraded),
		Not(ContainElement(polykubev1alpha1.ReasonDeploymentPending)), Not(ContainElement(polykubev1alpha1.ReasonProgressing))))

	// Scaling in Git scales the Deployment.
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key(ns, "checkout"), wl)).To(Succeed())
		setTargets(wl, map[string]int32{east: 5, "west": 1})
		g.Expect(c.Update(ctx, wl)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	Eventually(func(g Gomega) int32 { return *getDeployment(g, c, ns, "checkout").Spec.Replicas }).WithTimeout(timeout).Should(Equal(int32(5)))
}

func TestReconciler_ZeroReplicaTarget_KeepsDeploymentAtZero(t *testing.T) {
	c := start(t)
	ns := optest.Namespace(t, c, "zero")
	startOperator(t, east)
	Expect(c.Create(context.Background(), workload(ns, "batch", map[string]int32{east: 0, "west": 4}))).To(Succeed())

	eventuallyReady(t, c, ns, "batch", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	d := getDeployment(NewWithT(t), c, ns, "batch")
	Expect(*d.Spec.Replicas).To(BeZero())
	setDeploymentStatus(t, c, ns, "batch", 0)
	eventuallyReady(t, c, ns, "batch", metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
}

func TestReconciler_NotATarget_CreatesNothing(t *testing.T) {
	c := start(t)
	ns := optest.Namespace(t, c, "nottarget")
	startOperator(t, east)
	Expect(c.Create(context.Background(), workload(ns, "reports", map[string]int32{"west": 2}, httpPort))).To(Succeed())

	cond := eventuallyReady(t, c, ns, "reports", metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted)
	Expect(cond.Message).To(ContainSubstring(`"east" is not a target`))
	// The status is written after the Deployment and Service steps: had they been created, they
	// would exist by now.
	Expect(isNotFound(c, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reports"}})()).To(BeTrue())
	Expect(isNotFound(c, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "reports"}})()).To(BeTrue())
	wl := &polykubev1alpha1.Workload{}
	Expect(c.Get(context.Background(), key(ns, "reports"), wl)).To(Succeed())
	Expect(wl.Status.DesiredReplicas).To(BeZero())
	Expect(wl.Status.Targets).To(BeEmpty())
	Expect(wl.Status.Local).To(BeNil(), "no entry of its own: east is no target")
	Expect(wl.Status.Allocation).To(Equal(&polykubev1alpha1.AllocationDigest{
		Digest: placement.AllocationDigest(placement.Allocation{{Cluster: "west", Replicas: 2}}), Targets: 1, TargetsWithReplicas: 1,
	}))
}

func TestReconciler_Conflict_NeverAdoptsForeignObjects(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "conflict")

	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy", Labels: map[string]string{"team": "payments"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](7),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "legacy"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "legacy"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "legacy", Image: "legacy:1"}}},
			},
		},
	}
	Expect(c.Create(ctx, foreign)).To(Succeed())
	foreignSvc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "legacy"},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "legacy"}, Ports: []corev1.ServicePort{{Port: 9000}}},
	}
	Expect(c.Create(ctx, foreignSvc)).To(Succeed())
	// A Deployment labelled managed-by=polykube but not owned by this Workload is foreign too.
	impostor := foreign.DeepCopy()
	impostor.ObjectMeta = metav1.ObjectMeta{Namespace: ns, Name: "impostor", Labels: map[string]string{polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue}}
	Expect(c.Create(ctx, impostor)).To(Succeed())

	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "legacy", map[string]int32{east: 2}, httpPort))).To(Succeed())
	Expect(c.Create(ctx, workload(ns, "impostor", map[string]int32{east: 2}))).To(Succeed())

	cond := eventuallyReady(t, c, ns, "legacy", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)
	Expect(cond.Message).To(ContainSubstring("Deployment " + ns + "/legacy"))
	Expect(cond.Message).To(ContainSubstring("Service " + ns + "/legacy"))
	cond = eventuallyReady(t, c, ns, "impostor", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)
	Expect(cond.Message).To(ContainSubstring("Deployment " + ns + "/impostor"))

	for _, obj := range []client.Object{foreign, foreignSvc, impostor} {
		now := obj.DeepCopyObject().(client.Object)
		Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), now)).To(Succeed())
		Expect(now.GetResourceVersion()).To(Equal(obj.GetResourceVersion()), "%s was changed", obj.GetName())
		Expect(now.GetOwnerReferences()).To(BeEmpty())
	}

	Expect(counter(t, "polykube_reconcile_errors_total", map[string]string{"controller": "workload", "reason": polykubev1alpha1.ReasonConflict})).
		To(BeNumerically(">=", 2))

	// Once the foreign Deployment and Service are gone, the Workload takes the names.
	Expect(c.Delete(ctx, foreign)).To(Succeed())
	Expect(c.Delete(ctx, foreignSvc)).To(Succeed())
	eventuallyReady(t, c, ns, "legacy", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	Expect(*getDeployment(NewWithT(t), c, ns, "legacy").Spec.Replicas).To(Equal(int32(2)))
}

func TestReconciler_RemovedFromTargets_DeletesDeploymentAndService(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "removed")
	startOperator(t, east)
	wl := workload(ns, "api", map[string]int32{east: 2, "west": 2}, httpPort)
	Expect(c.Create(ctx, wl)).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}}
	Expect(isNotFound(c, dep)()).To(BeFalse())
	Expect(isNotFound(c, svc)()).To(BeFalse())

	// Dropping the ports removes only the Service.
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key(ns, "api"), wl)).To(Succeed())
		wl.Spec.Ports = nil
		g.Expect(c.Update(ctx, wl)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	Eventually(isNotFound(c, svc)).WithTimeout(timeout).Should(BeTrue())
	Expect(isNotFound(c, dep)()).To(BeFalse())

	// Dropping this cluster from the targets removes the Deployment.
	Eventually(func(g Gomega) {
		g.Expect(c.Get(ctx, key(ns, "api"), wl)).To(Succeed())
		setTargets(wl, map[string]int32{"west": 4})
		g.Expect(c.Update(ctx, wl)).To(Succeed())
	}).WithTimeout(timeout).Should(Succeed())
	Eventually(isNotFound(c, dep)).WithTimeout(timeout).Should(BeTrue())
	eventuallyReady(t, c, ns, "api", metav1.ConditionTrue, polykubev1alpha1.ReasonNotTargeted)
}

func TestReconciler_WorkloadDeleted_LeavesCleanupToOwnerReferences(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "deleted")
	op := startOperator(t, east)
	wl := workload(ns, "gone", map[string]int32{east: 1})
	Expect(c.Create(ctx, wl)).To(Succeed())
	eventuallyReady(t, c, ns, "gone", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	Expect(c.Delete(ctx, wl)).To(Succeed())
	Eventually(isNotFound(c, wl)).WithTimeout(timeout).Should(BeTrue())
	Eventually(func() bool { _, ok := gauge(t, "polykube_workload_desired_replicas", ns, "gone"); return ok }).
		WithTimeout(timeout).Should(BeFalse(), "the deleted Workload's metrics are dropped")
	// The operator neither recreates the Workload's objects nor fails on the orphan (which the
	// garbage collector removes in a real cluster).
	d := getDeployment(NewWithT(t), c, ns, "gone")
	Expect(d.OwnerReferences[0].UID).To(Equal(wl.UID))
	Expect(op.Log()).NotTo(ContainSubstring(`"error"`))
}

// A ServiceEndpoint of the Workload's own name provides its Service: the Workload hands the name
// over instead of reporting a conflict, and the Service ends up owned by the ServiceEndpoint.
func TestReconciler_ServiceEndpointOfSameName_TakesOverTheService(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "handover")
	startOperator(t, east)

	Expect(c.Create(ctx, workload(ns, "checkout", map[string]int32{east: 2}, httpPort))).To(Succeed())
	ownerKind := func() string {
		svc := &corev1.Service{}
		if err := c.Get(ctx, key(ns, "checkout"), svc); err != nil || len(svc.OwnerReferences) == 0 {
			return ""
		}
		return svc.OwnerReferences[0].Kind
	}
	Eventually(ownerKind, timeout, poll).Should(Equal("Workload"), "the Workload's own Service")

	se := &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "checkout"},
		Spec: polykubev1alpha1.ServiceEndpointSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "checkout"},
			Ports:       []polykubev1alpha1.WorkloadPort{httpPort},
		},
	}
	Expect(c.Create(ctx, se)).To(Succeed())
	Eventually(ownerKind, timeout, poll).Should(Equal("ServiceEndpoint"), "the Service to be handed over to the ServiceEndpoint")

	cond := eventuallyReady(t, c, ns, "checkout", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	Expect(cond.Reason).NotTo(Equal(polykubev1alpha1.ReasonConflict))
	Consistently(func() string {
		w := &polykubev1alpha1.Workload{}
		if err := c.Get(ctx, key(ns, "checkout"), w); err != nil {
			return err.Error()
		}
		return meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.ReadyCondition).Reason
	}, 2*time.Second, poll).ShouldNot(Equal(polykubev1alpha1.ReasonConflict))
}

// A manual change of a non-autoscaled Workload's replicas (kubectl scale) is reverted to this
// cluster's allocation, on the same Deployment (issue 16, item 4).
func TestReconciler_ManualReplicaEdit_Reverted(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "scaled")
	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 2}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	before := getDeployment(NewWithT(t), c, ns, "api")

	scaled := before.DeepCopy()
	scaled.Spec.Replicas = ptr.To[int32](5)
	Expect(c.Patch(ctx, scaled, client.MergeFrom(before))).To(Succeed())

	Eventually(func(g Gomega) {
		d := getDeployment(g, c, ns, "api")
		g.Expect(d.UID).To(Equal(before.UID), "the same Deployment")
		g.Expect(d.Spec.Replicas).To(HaveValue(Equal(int32(2))), "scaled back to the allocation")
		g.Expect(d.Generation).To(BeNumerically(">=", before.Generation+2), "the edit and its revert were both written")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}

// An image changed by hand (kubectl set image) on the operator's Deployment is set back to the
// effective template's, although the template hash annotation still matches.
func TestReconciler_ManualImageEdit_Reverted(t *testing.T) {
	c := start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "imaged")
	startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "api", map[string]int32{east: 1}))).To(Succeed())
	eventuallyReady(t, c, ns, "api", metav1.ConditionFalse, polykubev1alpha1.ReasonDeploymentPending)
	before := getDeployment(NewWithT(t), c, ns, "api")
	image := before.Spec.Template.Spec.Containers[0].Image

	edited := before.DeepCopy()
	edited.Spec.Template.Spec.Containers[0].Image = "example.com/someone-else:latest"
	Expect(c.Patch(ctx, edited, client.MergeFrom(before))).To(Succeed())

	Eventually(func(g Gomega) {
		d := getDeployment(g, c, ns, "api")
		g.Expect(d.UID).To(Equal(before.UID), "the same Deployment")
		g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(image), "the image set back")
		g.Expect(d.Generation).To(BeNumerically(">=", before.Generation+2), "the edit and its revert were both written")
	}).WithTimeout(timeout).WithPolling(poll).Should(Succeed())
}
