package status

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// pagedCluster is a FakeCluster holding five Workloads (with managed fields and kubectl's
// last-applied annotation, as a real server returns them) and three operator Deployments.
func pagedCluster(t *testing.T) (*fleettest.FakeCluster, []Target) {
	t.Helper()
	c := fleettest.NewFakeCluster(t)
	var wls, deps []any
	for i := range 5 {
		w := weighted("shop", fmt.Sprintf("web-%d", i), 2, "alpha")
		w.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kustomize-controller", Operation: metav1.ManagedFieldsOperationApply,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
		w.Annotations = map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"big":"copy"}`, "team": "payments"}
		w.Status.Cluster = "alpha"
		wls = append(wls, w)
	}
	for i := range 3 {
		d := deployment("shop", fmt.Sprintf("web-%d", i), 2)
		d.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "polykube"}}
		d.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.example/web:1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}
		d.Spec.Template.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "registry.example/init:1"}}
		d.Status.Replicas = 2
		deps = append(deps, d)
	}
	c.Set("workloads", wls...)
	c.Set("deployments", deps...)
	targets, err := ResolveTargets(ContextSelection{Kubeconfig: fleettest.FakeKubeconfig(t, map[string]*fleettest.FakeCluster{"alpha": c}), Contexts: []string{"alpha"}})
	if err != nil {
		t.Fatal(err)
	}
	return c, targets
}

func requestsFor(c *fleettest.FakeCluster, resource string) []string {
	var out []string
	for _, r := range c.Requests() {
		if q, ok := strings.CutPrefix(r, resource+"?"); ok {
			// The client's request timeout is not what is tested here.
			v, _ := url.ParseQuery(q)
			v.Del("timeout")
			out = append(out, v.Encode())
		}
	}
	return out
}

// TestCollect_PagedLists: every list is read in pages of Query.PageSize, following the
// server's continue tokens to the last page, and the snapshot holds every item once.
func TestCollect_PagedLists(t *testing.T) {
	g := NewWithT(t)
	c, targets := pagedCluster(t)

	s := Collect(context.Background(), targets, Query{Timeout: 5 * time.Second, PageSize: 2}, nil)[0]

	g.Expect(s.Err).NotTo(HaveOccurred())
	g.Expect(s.Warnings).To(BeEmpty())
	var names []string
	for _, w := range s.Workloads {
		names = append(names, w.Name)
	}
	g.Expect(names).To(Equal([]string{"web-0", "web-1", "web-2", "web-3", "web-4"}))
	g.Expect(s.Deployments).To(HaveLen(3))
	g.Expect(requestsFor(c, "workloads")).To(Equal([]string{"limit=2", "continue=2&limit=2", "continue=4&limit=2"}))
	g.Expect(requestsFor(c, "deployments")).To(HaveLen(2))
	for _, r := range requestsFor(c, "deployments") {
		g.Expect(r).To(ContainSubstring("labelSelector="), "every page keeps the list's options")
	}
	for _, res := range []string{"federations", "clustermembers", "serviceendpoints", "datastorebindings"} {
		g.Expect(requestsFor(c, res)).To(Equal([]string{"limit=2"}), res)
	}

	// Without a page size, the default one is asked for.
	c2, targets2 := pagedCluster(t)
	g.Expect(Collect(context.Background(), targets2, Query{Timeout: 5 * time.Second}, nil)[0].Workloads).To(HaveLen(5))
	g.Expect(requestsFor(c2, "workloads")).To(Equal([]string{fmt.Sprintf("limit=%d", DefaultPageSize)}))
}

// TestCollect_PagedListExpired: when the server has forgotten the continue token between two
// pages (410 Expired), the list is read again whole, without duplicating the first page.
func TestCollect_PagedListExpired(t *testing.T) {
	g := NewWithT(t)
	c, targets := pagedCluster(t)
	c.ExpireContinue(true)

	s := Collect(context.Background(), targets, Query{Timeout: 5 * time.Second, PageSize: 2}, nil)[0]

	g.Expect(s.Err).NotTo(HaveOccurred())
	g.Expect(s.Workloads).To(HaveLen(5))
	g.Expect(s.Deployments).To(HaveLen(3))
	g.Expect(requestsFor(c, "workloads")).To(Equal([]string{"limit=2", "continue=2&limit=2", ""}))
}

// TestCollect_ReducesSnapshots: a snapshot keeps what the views read and drops the rest as each
// page arrives: no managed fields or last-applied copies; of a Deployment, its name, labels,
// replicas and container images only.
func TestCollect_ReducesSnapshots(t *testing.T) {
	g := NewWithT(t)
	_, targets := pagedCluster(t)

	s := Collect(context.Background(), targets, Query{Timeout: 5 * time.Second, PageSize: 2}, nil)[0]

	g.Expect(s.Err).NotTo(HaveOccurred())
	w := s.Workloads[0]
	g.Expect(w.ManagedFields).To(BeNil())
	g.Expect(w.Annotations).To(Equal(map[string]string{"team": "payments"}))
	g.Expect(w.Spec.Distribution.Replicas).To(Equal(ptr.To[int32](2)), "the spec is kept whole")
	g.Expect(w.Status.Cluster).To(Equal("alpha"), "the status is kept whole")

	d := s.Deployments[0]
	g.Expect(d).To(Equal(appsv1.Deployment{
		TypeMeta: d.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web-0", Labels: map[string]string{
			polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.WorkloadNameLabel: "web-0",
		}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "init", Image: "registry.example/init:1"}},
			Containers:     []corev1.Container{{Name: "app", Image: "registry.example/web:1"}},
		}}},
		Status: appsv1.DeploymentStatus{Replicas: 2},
	}))
}
