package workload

import (
	"path/filepath"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/golden"
	"github.com/polykube/polykube/operator/reconcilers/datastorebinding"
	"github.com/polykube/polykube/placement"
	"github.com/polykube/polykube/placement/contract"
)

// contractUID is the UID every Workload of the corpus is given, so that the owner references
// of the rendered objects are stable.
const contractUID = types.UID("00000000-0000-4000-8000-000000000034")

// renderedObjects are the objects the operator of one cluster writes for one Workload.
type renderedObjects struct {
	Deployment *appsv1.Deployment                     `json:"deployment"`
	Service    *corev1.Service                        `json:"service,omitempty"`
	HPA        *autoscalingv2.HorizontalPodAutoscaler `json:"hpa,omitempty"`
}

// TestContract_RenderedObjects pins the Deployment, Service and HPA the operator of every
// target cluster renders for every Workload of the upgrade contract's corpus
// (placement/testdata/contract/). The operator compares what it wants with what runs by the
// template-hash annotation and rewrites on any difference, so an operator version that renders
// differently from the one it replaces rewrites the objects of every Workload during the
// upgrade: a change of a Deployment's pod template rolls every pod. docs/upgrading.md forbids
// that between versions that may run side by side; a change needs a decision record and a
// version gate, and then `go test ./operator/reconcilers/workload/ -run
// TestContract_RenderedObjects -update`.
func TestContract_RenderedObjects(t *testing.T) {
	c, err := contract.Load(filepath.Join("..", "..", "..", "placement", "testdata", "contract"))
	if err != nil {
		t.Fatalf("load the corpus: %v", err)
	}
	pinned := map[string]bool{}
	for i := range c.Workloads {
		wl := c.Workloads[i].DeepCopy()
		wl.UID = contractUID
		key := wl.Namespace + "/" + wl.Name
		alloc, err := placement.ForWorkloadIn(wl, c.Roster)
		if err != nil {
			t.Fatalf("allocate %s: %v", key, err)
		}
		bounds, autoscaled, err := placement.BoundsForWorkloadIn(wl, c.Roster)
		if err != nil {
			t.Fatalf("autoscaling bounds of %s: %v", key, err)
		}
		for _, share := range alloc {
			cluster := share.Cluster
			file := filepath.Join("contract", wl.Namespace+"_"+wl.Name, cluster+".yaml")
			pinned[file] = true
			t.Run(key+"/"+cluster, func(t *testing.T) {
				effective, _, err := placement.EffectiveTemplate(wl.Spec, c.Member(cluster))
				if err != nil {
					t.Fatalf("effective template of %s in %s: %v", key, cluster, err)
				}
				got := renderedObjects{
					Deployment: desiredDeployment(wl, effective, cluster, share.Replicas, bindingsOf(c, wl), nil),
					Service:    desiredService(wl, cluster),
				}
				if b, _ := bounds.For(cluster); autoscaled && b.Autoscaled() {
					got.HPA = desiredHPA(wl, cluster, b)
				}
				for _, d := range golden.AssertFields(t, file, got) {
					t.Errorf("Workload %s in cluster %s: %s is %s, pinned as %s: this %s. "+
						"Two versions that may run side by side must render the same objects; such a change needs a decision record and a version gate (docs/upgrading.md)",
						key, cluster, d.Path, d.Got, d.Want, consequence(d.Path))
				}
			})
		}
	}
	entries, err := filepath.Glob(filepath.Join("testdata", "contract", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		rel, _ := filepath.Rel("testdata", e)
		if !pinned[rel] {
			t.Errorf("golden file %s renders no target of the corpus; delete it if that was on purpose", e)
		}
	}
	if len(entries) == 0 && !golden.Updating() {
		t.Error("no golden file under testdata/contract/: run the test with -update to create them")
	}
}

// bindingsOf are the corpus's DatastoreBindings of wl, in the order the operator applies them,
// each with its Secret present.
func bindingsOf(c contract.Corpus, wl *polykubev1alpha1.Workload) []binding {
	var out []binding
	var inNamespace []polykubev1alpha1.DatastoreBinding
	for _, b := range c.Bindings {
		if b.Namespace == wl.Namespace {
			inNamespace = append(inNamespace, b)
		}
	}
	for _, b := range datastorebinding.ForWorkload(inNamespace, wl.Name) {
		out = append(out, binding{DatastoreBinding: b.DeepCopy(), resolved: true})
	}
	return out
}

// consequence says what a difference at path (of renderedObjects) does to a running cluster.
func consequence(path string) string {
	switch {
	case strings.HasPrefix(path, "deployment.spec.template"), strings.HasPrefix(path, "deployment.spec.selector"):
		return "changes the Deployment's pod template (or selector) and so rolls every pod of the Workload in the cluster"
	case strings.HasPrefix(path, "deployment.metadata.annotations"):
		return "changes the Deployment's template-hash annotation, so the operator rewrites the Deployment"
	case strings.HasPrefix(path, "deployment.spec.replicas"):
		return "changes the replicas the cluster runs"
	case strings.HasPrefix(path, "deployment"):
		return "changes the Deployment the operator writes"
	case strings.HasPrefix(path, "service"):
		return "changes the Service, and so how calls reach the Workload"
	case strings.HasPrefix(path, "hpa"):
		return "changes the HorizontalPodAutoscaler, and so how far the cluster scales"
	}
	return "changes what the operator writes"
}
