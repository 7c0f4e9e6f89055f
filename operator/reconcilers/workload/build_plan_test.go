package workload

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status/plan"
	"github.com/polykube/polykube/placement"
)

// TestDesiredDeployment_IsWhatPlanShows renders the plan's corpus through both paths, the
// operator's desiredDeployment and desiredService and polykube-status plan, for every cluster
// of its roster, and requires the same Deployment and Service but for what only a cluster
// knows (the owner reference to the Workload's UID and the hash of what the operator wrote; no
// bindings here).
func TestDesiredDeployment_IsWhatPlanShows(t *testing.T) {
	dir := filepath.Join("..", "..", "..", "internal", "status", "plan", "testdata", "plan", "fleet")
	var roster []polykubev1alpha1.ClusterMember
	workloads := map[string]*polykubev1alpha1.Workload{}
	for _, f := range []string{"roster.yaml", "workloads.yaml"} {
		data, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil {
			t.Fatal(err)
		}
		for _, doc := range strings.Split(string(data), "\n---") {
			var tm metav1.TypeMeta
			if err := yaml.Unmarshal([]byte(doc), &tm); err != nil {
				t.Fatal(err)
			}
			switch tm.Kind {
			case "ClusterMember":
				m := polykubev1alpha1.ClusterMember{}
				if err := yaml.UnmarshalStrict([]byte(doc), &m); err != nil {
					t.Fatal(err)
				}
				roster = append(roster, m)
			case "Workload":
				w := &polykubev1alpha1.Workload{}
				if err := yaml.UnmarshalStrict([]byte(doc), w); err != nil {
					t.Fatal(err)
				}
				workloads[w.Name] = w
			}
		}
	}
	if len(roster) == 0 || len(workloads) == 0 {
		t.Fatalf("the corpus in %s has %d ClusterMembers and %d Workloads", dir, len(roster), len(workloads))
	}
	compared, services := 0, 0
	for i := range roster {
		member := &roster[i]
		p, err := plan.Plan([]string{dir}, member.Name, plan.LoadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, pw := range p.Workloads {
			if pw.Deployment == nil {
				continue
			}
			wl := workloads[pw.Name]
			effective, _, err := placement.EffectiveTemplate(wl.Spec, member)
			if err != nil {
				t.Fatal(err)
			}
			got := desiredDeployment(wl, effective, member.Name, pw.Deployment.Replicas, nil, nil)
			got.OwnerReferences, got.Annotations = nil, nil
			want := pw.Deployment.Object.DeepCopy()
			want.TypeMeta = metav1.TypeMeta{}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("%s in %s: the operator's Deployment differs from the plan's (-plan +operator):\n%s", pw.Name, member.Name, d)
			}
			compared++

			// The Service: desiredService against the plan's, but for the owner reference and
			// the hash; nil on both paths for a Workload without ports.
			svc := desiredService(wl, member.Name)
			if svc != nil {
				svc.OwnerReferences, svc.Annotations = nil, nil
				services++
			}
			var planned *corev1.Service
			if pw.Service != nil {
				planned = pw.Service.DeepCopy()
				planned.TypeMeta = metav1.TypeMeta{}
			}
			if d := cmp.Diff(planned, svc); d != "" {
				t.Errorf("%s in %s: the operator's Service differs from the plan's (-plan +operator):\n%s", pw.Name, member.Name, d)
			}
		}
	}
	if compared < 3 {
		t.Fatalf("only %d Deployments compared; the corpus should render more", compared)
	}
	if services == 0 {
		t.Fatal("no Workload of the corpus declares ports: no Service was compared")
	}
}
