package release

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/testenv"
)

const testDigest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// writeTestChart renders gitops/operator and writes the chart into a temporary directory.
func writeTestChart(t *testing.T) string {
	t.Helper()
	tmp := t.TempDir()
	rendered, err := RenderOperator(testenv.RepoRoot(), "registry.example/polykube/operator@"+testDigest, tmp)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(tmp, ChartName)
	if err := writeChart(dir, rendered, "v1.2.3", "registry.example/polykube/operator", testDigest); err != nil {
		t.Fatal(err)
	}
	return dir
}

// renderChart renders the chart's templates with values, as helm install would.
func renderChart(t *testing.T, dir string, values map[string]any) (map[string]string, error) {
	t.Helper()
	ch, err := loader.LoadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	vals, err := chartutil.ToRenderValues(ch, values, chartutil.ReleaseOptions{Name: "polykube", Namespace: "default", IsInstall: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return engine.Render(ch, vals)
}

func deployment(t *testing.T, out map[string]string) *appsv1.Deployment {
	t.Helper()
	d := &appsv1.Deployment{}
	if err := yaml.UnmarshalStrict([]byte(out["polykube/templates/deployment-polykube-operator.yaml"]), d); err != nil {
		t.Fatalf("decode the rendered Deployment: %v", err)
	}
	return d
}

func TestHelmChart_LintClean(t *testing.T) {
	NewWithT(t).Expect(LintChart(writeTestChart(t), map[string]any{"clusterName": "east"})).To(Succeed())
}

func TestHelmChart_ClusterNameRequired(t *testing.T) {
	dir := writeTestChart(t)
	for _, tt := range []struct {
		name   string
		values map[string]any
		want   string
	}{
		{"missing", nil, "clusterName is required: set it to the name of this cluster's ClusterMember (helm install ... --set clusterName=NAME)"},
		{"empty", map[string]any{"clusterName": ""}, "clusterName is required"},
		{"not a DNS label", map[string]any{"clusterName": "East_1"}, `clusterName "East_1" is not a DNS label of at most 32 characters`},
		{"too long", map[string]any{"clusterName": strings.Repeat("a", 33)}, "is not a DNS label of at most 32 characters"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderChart(t, dir, tt.values)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

func TestHelmChart_Values(t *testing.T) {
	g := NewWithT(t)
	dir := writeTestChart(t)

	out, err := renderChart(t, dir, map[string]any{"clusterName": "east"})
	g.Expect(err).NotTo(HaveOccurred())
	d := deployment(t, out)
	c := d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("registry.example/polykube/operator@" + testDigest))
	g.Expect(c.Args).To(ContainElements("--cluster-name=east", "--leader-elect=true"))
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)), "the defaults are gitops/operator's: two replicas, one leader")
	g.Expect(c.Resources.Requests.Cpu().String()).To(Equal("50m"), "the defaults are gitops/operator's")
	g.Expect(d.Spec.Template.Spec.NodeSelector).To(BeEmpty())
	g.Expect(d.Spec.Template.Spec.SecurityContext.RunAsNonRoot).To(HaveValue(BeTrue()))
	// The HA settings come with the base, not from values: the replicas on different nodes where
	// there are several, scheduled ahead of the workloads they run.
	g.Expect(d.Spec.Template.Spec.PriorityClassName).To(Equal("polykube-operator"))
	g.Expect(d.Spec.Template.Spec.TopologySpreadConstraints).To(ContainElement(And(
		HaveField("TopologyKey", "kubernetes.io/hostname"),
		HaveField("WhenUnsatisfiable", corev1.ScheduleAnyway),
		HaveField("LabelSelector.MatchLabels", Equal(d.Spec.Selector.MatchLabels)),
	)), "the chart's Deployment must spread its replicas over nodes as gitops/operator's does")

	out, err = renderChart(t, dir, map[string]any{
		"clusterName":    "west",
		"image":          map[string]any{"digest": "", "tag": "v9.9.9"},
		"replicas":       3,
		"leaderElection": false,
		"resources":      map[string]any{"limits": map[string]any{"memory": "512Mi"}},
		"nodeSelector":   map[string]any{"kubernetes.io/os": "linux"},
		"tolerations":    []any{map[string]any{"key": "dedicated", "operator": "Exists"}},
	})
	g.Expect(err).NotTo(HaveOccurred())
	d = deployment(t, out)
	c = d.Spec.Template.Spec.Containers[0]
	g.Expect(c.Image).To(Equal("registry.example/polykube/operator:v9.9.9"))
	g.Expect(c.Args).To(ContainElements("--cluster-name=west", "--leader-elect=false"))
	g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(c.Resources.Limits.Memory().String()).To(Equal("512Mi"))
	g.Expect(d.Spec.Template.Spec.NodeSelector).To(HaveKeyWithValue("kubernetes.io/os", "linux"))
	g.Expect(d.Spec.Template.Spec.Tolerations).To(HaveLen(1))
}

// TestHelmChart_SameObjectsAsInstallYAML checks that the chart is the kustomize base and not a
// second copy: every object of install.yaml is in the chart's templates, and nothing else.
func TestHelmChart_SameObjectsAsInstallYAML(t *testing.T) {
	g := NewWithT(t)
	dir := writeTestChart(t)
	ch, err := loader.LoadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(ch.CRDObjects()).To(BeEmpty(), "CRDs in crds/ are installed before the render, also by an install the render refuses")
	var chartObjects []string
	out, err := renderChart(t, dir, map[string]any{"clusterName": "east"})
	g.Expect(err).NotTo(HaveOccurred())
	for name, body := range out {
		if strings.HasSuffix(name, ".tpl") {
			continue
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		g.Expect(yaml.Unmarshal([]byte(body), &meta)).To(Succeed(), name)
		chartObjects = append(chartObjects, meta.Kind+"/"+meta.Metadata.Name)
	}
	rendered, err := RenderOperator(testenv.RepoRoot(), "registry.example/polykube/operator@"+testDigest, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	var installObjects []string
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Name string `json:"name"`
			} `json:"metadata"`
		}
		g.Expect(yaml.Unmarshal([]byte(doc), &meta)).To(Succeed())
		installObjects = append(installObjects, meta.Kind+"/"+meta.Metadata.Name)
	}
	g.Expect(chartObjects).To(ConsistOf(installObjects))
}

// TestHelmChart_UninstallKeepsCRDsAndNamespace checks that helm uninstall keeps what holds the
// cluster's Workloads (the CRDs) and its identity pin (the namespace), and nothing else.
func TestHelmChart_UninstallKeepsCRDsAndNamespace(t *testing.T) {
	g := NewWithT(t)
	out, err := renderChart(t, writeTestChart(t), map[string]any{"clusterName": "east"})
	g.Expect(err).NotTo(HaveOccurred())
	var crds int
	for name, body := range out {
		if strings.HasSuffix(name, ".tpl") {
			continue
		}
		var meta struct {
			Kind     string `json:"kind"`
			Metadata struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		g.Expect(yaml.Unmarshal([]byte(body), &meta)).To(Succeed(), name)
		keep := meta.Kind == "CustomResourceDefinition" || meta.Kind == "Namespace"
		if meta.Kind == "CustomResourceDefinition" {
			crds++
		}
		g.Expect(meta.Metadata.Annotations["helm.sh/resource-policy"] == "keep").To(Equal(keep), "%s: helm.sh/resource-policy keep", name)
	}
	g.Expect(crds).To(BeNumerically(">", 0), "the chart has no CRD")
}
