package status

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// sharedSpecFleet is three FakeClusters holding the same two Workloads (each copy with its own
// cluster's status) and their operators' Deployments, except that gamma's copy of web asks for
// another replica count.
func sharedSpecFleet(t *testing.T) []Target {
	t.Helper()
	names := []string{"alpha", "beta", "gamma"}
	clusters := map[string]*fleettest.FakeCluster{}
	for i, n := range names {
		c := fleettest.NewFakeCluster(t)
		var wls, deps, members []any
		for _, name := range []string{"api", "web"} {
			w := weighted("shop", name, 6, names...)
			w.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app", Image: "registry.example/" + name + ":1", Env: []corev1.EnvVar{{Name: "A", Value: "b"}}}}
			if n == "gamma" && name == "web" {
				w.Spec.Distribution.Replicas = ptr.To[int32](9)
			}
			op := operated(w, n)
			wls = append(wls, &op)
			d := deployment("shop", name, 2)
			d.Labels[polykubev1alpha1.ClusterLabel] = n
			d.Spec.Template.Spec.Containers = w.Spec.Template.Spec.Containers
			deps = append(deps, &d)
		}
		for j, m := range names {
			cm := member(m, int32(j+1), i == j)
			members = append(members, &cm)
		}
		f := federation("fleet", n, names...)
		c.Set("workloads", wls...)
		c.Set("deployments", deps...)
		c.Set("clustermembers", members...)
		c.Set("federations", &f)
		clusters[n] = c
	}
	targets, err := ResolveTargets(ContextSelection{Kubeconfig: fleettest.FakeKubeconfig(t, clusters), Contexts: names})
	if err != nil {
		t.Fatal(err)
	}
	return targets
}

// TestCollect_SharesEqualSpecs: the copies of a Workload whose spec JSON is the same in several
// clusters share one decoded spec, and equal container lists of Deployments are kept once; a
// copy whose spec differs keeps its own.
func TestCollect_SharesEqualSpecs(t *testing.T) {
	g := NewWithT(t)
	targets := sharedSpecFleet(t)

	snaps := collect(context.Background(), targets, Query{Timeout: 5 * time.Second, Namespace: "shop"}, nil)

	g.Expect(snaps).To(HaveLen(3))
	for _, s := range snaps {
		g.Expect(s.Err).NotTo(HaveOccurred())
		g.Expect(s.Workloads).To(BeEmpty(), "the compact form only, until Collect or Merge")
		g.Expect(s.objs.workloads).To(HaveLen(2))
		g.Expect(s.objs.deployments).To(HaveLen(2))
	}
	api := func(i int) *workloadCopy { return &snaps[i].objs.workloads[0] }
	web := func(i int) *workloadCopy { return &snaps[i].objs.workloads[1] }
	g.Expect(api(0).meta.Name).To(Equal("api"))
	g.Expect(api(0).spec).To(BeIdenticalTo(api(1).spec))
	g.Expect(api(0).spec).To(BeIdenticalTo(api(2).spec))
	g.Expect(web(0).spec).To(BeIdenticalTo(web(1).spec))
	g.Expect(web(2).spec).NotTo(BeIdenticalTo(web(0).spec), "gamma's web has another spec")
	g.Expect(web(2).spec.Distribution.Replicas).To(Equal(ptr.To[int32](9)))
	g.Expect(api(1).status.Cluster).To(Equal("beta"), "the status is each copy's own")
	g.Expect(&snaps[0].objs.deployments[0].containers[0]).To(BeIdenticalTo(&snaps[2].objs.deployments[0].containers[0]))
	g.Expect(snaps[0].objs.deployments[0].containers).To(Equal([]corev1.Container{{Name: "app", Image: "registry.example/api:1"}}))
}

// TestRead_SameReportAsCollectAndMerge: Read, which merges the compact form, reports what Merge
// reports of Collect's full snapshots, disagreement included.
func TestRead_SameReportAsCollectAndMerge(t *testing.T) {
	g := NewWithT(t)
	targets := sharedSpecFleet(t)
	q := Query{Timeout: 5 * time.Second, Namespace: "shop"}

	full := Collect(context.Background(), targets, q, nil)
	for _, s := range full {
		g.Expect(s.objs).To(BeNil())
		g.Expect(s.Workloads).To(HaveLen(2))
	}
	want := Merge(full, q)
	got := Read(context.Background(), targets, q, nil)

	g.Expect(got).To(Equal(want))
	g.Expect(got.Summary.Disagreements).To(BeNumerically(">", 0), "gamma's web differs")
	var kinds []string
	for _, d := range got.Disagreements {
		kinds = append(kinds, d.Kind+" "+d.Object)
	}
	g.Expect(kinds).To(ContainElement(DisagreeSpec + " Workload shop/web"))
}

// TestEachStreamedItem: a list's items are handed over one at a time whatever the order of its
// fields, its metadata is read, and a truncated list is an error.
func TestEachStreamedItem(t *testing.T) {
	g := NewWithT(t)
	read := func(body string) ([]string, metav1.ListMeta, error) {
		var items []string
		var meta metav1.ListMeta
		var buf json.RawMessage
		err := eachStreamedItem(strings.NewReader(body), &meta, &buf, func(b []byte) error {
			items = append(items, string(b))
			return nil
		})
		return items, meta, err
	}

	items, meta, err := read(`{"metadata":{"continue":"next","resourceVersion":"7"},"apiVersion":"v1","items":[{"a":1}, {"b":[2,3]}],"kind":"L"}`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(Equal([]string{`{"a":1}`, `{"b":[2,3]}`}))
	g.Expect(meta.Continue).To(Equal("next"))

	items, meta, err = read(`{"apiVersion":"v1","items":[{"a":1}],"kind":"L","metadata":{"continue":"last"}}`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(HaveLen(1))
	g.Expect(meta.Continue).To(Equal("last"), "metadata after the items, as kube-apiserver writes a custom resource list")

	items, _, err = read(" {\n \"items\" : [ {\"a\":\"}\\\"]{\"} , \"x\" ,7,null, [1,[2]] ] } ")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(Equal([]string{`{"a":"}\"]{"}`, `"x"`, `7`, `null`, `[1,[2]]`}), "brackets and escaped quotes inside strings, white space between values")

	items, _, err = read(`{"items":null,"kind":"L"}`)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(items).To(BeEmpty())

	_, _, err = read(`{"items":[{"a":1},{"b":`)
	g.Expect(err).To(MatchError(ContainSubstring("items: [1]")))
}

// TestWorkloadCopyOf_SkipsManagedFields: a Workload item's managed fields are not decoded, its
// kubectl last-applied copy is dropped, the rest of its metadata and its status are kept.
func TestWorkloadCopyOf_SkipsManagedFields(t *testing.T) {
	g := NewWithT(t)
	var w wireWorkload
	raw := `{"apiVersion":"polykube.kismet.io/v1alpha1","kind":"Workload","metadata":{"name":"web","namespace":"shop","generation":3,
		"annotations":{"kubectl.kubernetes.io/last-applied-configuration":"{}","team":"payments"},
		"managedFields":[{"manager":"kustomize-controller","operation":"Apply","fieldsType":"FieldsV1","fieldsV1":{"f:spec":{}}}]},
		"spec":{"distribution":{"replicas":2}},"status":{"cluster":"alpha"}}`
	g.Expect(decodeItem([]byte(raw), &w)).To(Succeed())
	g.Expect(w.Metadata.ObjectMeta.ManagedFields).To(BeNil(), "not decoded at all")

	c, err := workloadCopyOf([]byte(raw), newSharer())
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(c.meta).To(Equal(metav1.ObjectMeta{Name: "web", Namespace: "shop", Generation: 3, Annotations: map[string]string{"team": "payments"}}))
	g.Expect(c.spec.Distribution.Replicas).To(Equal(ptr.To[int32](2)))
	g.Expect(c.status.Cluster).To(Equal("alpha"))
}
