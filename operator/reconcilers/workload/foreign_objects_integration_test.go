package workload_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

	blockDep := foreignDeployment(ns, "sentinel-dep")
	Expect(c.Create(ctx, blockDep)).To(Succeed())
	blockSvc := foreignService(ns, "sentinel-svc")
	Expect(c.Create(ctx, blockSvc)).To(Succeed())
	op := startOperator(t, east)
	Expect(c.Create(ctx, workload(ns, "sentinel-dep", map[string]int32{east: 1}))).To(Succeed())
	Expect(c.Create(ctx, workload(ns, "sentinel-svc", map[string]int32{east: 1}, httpPort))).To(Succeed())
	eventuallyReady(t, c, ns, "sentinel-dep", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)
	eventuallyReady(t, c, ns, "sentinel-svc", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict)

	// The burst: created, then each changed once, as other controllers keep doing.
	for i := range n {
		name := fmt.Sprintf("%s%03d", foreignPrefix, i)
		d := foreignDeployment(ns, name)
		Expect(c.Create(ctx, d)).To(Succeed())
		Expect(c.Create(ctx, foreignService(ns, name))).To(Succeed())
		Expect(c.Create(ctx, foreignSlice(ns, name))).To(Succeed())
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

func foreignDeployment(ns, name string) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example.com/other:1"}}},
			},
		},
	}
}

// foreignService is headless: the test API server's Service range has room for 254 cluster IPs,
// which the package's other tests share.
func foreignService(ns, name string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": name}},
		Spec: corev1.ServiceSpec{ClusterIP: corev1.ClusterIPNone, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 8080}}},
	}
}

// foreignSlice is the slice the EndpointSlice controller keeps for a foreign Service.
func foreignSlice(ns, name string) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name + "-abcde", Labels: map[string]string{
			discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io", "app": name,
		}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.9.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
	}
}
