package release

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/polykube/polykube/internal/testenv"
)

// decodeAll reads every object of a multi-document YAML stream.
func decodeAll(t *testing.T, data string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	dec := yaml.NewYAMLOrJSONDecoder(strings.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out
			}
			t.Fatalf("decode: %v", err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
}

// TestInstallYAMLAndChart_ApplyToAnAPIServer applies install.yaml to a real API server as
// `kubectl create` and a first client-side apply do (a create of each object, in file order),
// then server-side applies the Helm chart's objects over it: the chart is the same base, so
// they must agree on every object.
func TestInstallYAMLAndChart_ApplyToAnAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts kube-apiserver and etcd: not in -short")
	}
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	assets, err := testenv.AssetsDir(ctx)
	if err != nil {
		t.Skipf("no kube-apiserver and etcd (make tools builds them): %v", err)
	}
	// No CRDs installed up front: install.yaml brings them.
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 3 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: scheme.Scheme})
	g.Expect(err).NotTo(HaveOccurred())

	ref := "registry.example/polykube/operator@" + testDigest
	rendered, err := RenderOperator(testenv.RepoRoot(), ref, t.TempDir())
	g.Expect(err).NotTo(HaveOccurred())
	install := strings.Replace(string(rendered), ClusterNamePlaceholder, "east", 1)
	for _, u := range decodeAll(t, install) {
		g.Expect(c.Create(ctx, u)).To(Succeed(), "create %s %s", u.GetKind(), u.GetName())
	}
	d := &appsv1.Deployment{}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "polykube-system", Name: "polykube-operator"}, d)).To(Succeed())
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(ref))
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--cluster-name=east"))

	dir := writeTestChart(t)
	ch, err := loader.LoadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	var objects []*unstructured.Unstructured
	for _, crd := range ch.CRDObjects() {
		objects = append(objects, decodeAll(t, string(crd.File.Data))...)
	}
	out, err := renderChart(t, dir, map[string]any{"clusterName": "east", "replicas": 2})
	g.Expect(err).NotTo(HaveOccurred())
	for name, body := range out {
		if !strings.HasSuffix(name, ".tpl") {
			objects = append(objects, decodeAll(t, body)...)
		}
	}
	for _, u := range objects {
		g.Expect(c.Patch(ctx, u, client.Apply, client.ForceOwnership, client.FieldOwner("helm"))).To(Succeed(),
			"server-side apply %s %s", u.GetKind(), u.GetName())
	}
	g.Expect(c.Get(ctx, client.ObjectKey{Namespace: "polykube-system", Name: "polykube-operator"}, d)).To(Succeed())
	g.Expect(*d.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal(ref))
}
