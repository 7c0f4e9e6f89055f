package release

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart/loader"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/cli-runtime/pkg/genericclioptions"
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
	g.Expect(ch.CRDObjects()).To(BeEmpty(), "the CRDs are templates")
	var objects []*unstructured.Unstructured
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

// TestHelmChart_RefusedInstallLeavesNothing installs the chart without clusterName on an empty
// API server with the Helm SDK, as `helm install` does: it must fail at render with the
// chart's advice and leave nothing behind, not even the CRDs (Helm installs a chart's crds/
// directory before it renders the templates).
func TestHelmChart_RefusedInstallLeavesNothing(t *testing.T) {
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
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 3 * time.Minute, ControlPlaneStopTimeout: time.Minute}
	cfg, err := env.Start()
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(func() { _ = env.Stop() })
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	g.Expect(os.WriteFile(kubeconfig, env.KubeConfig, 0o600)).To(Succeed())

	flags := genericclioptions.NewConfigFlags(false)
	ns := "default"
	flags.KubeConfig, flags.Namespace = &kubeconfig, &ns
	helm := &action.Configuration{}
	g.Expect(helm.Init(flags, ns, "secret", t.Logf)).To(Succeed())
	ch, err := loader.LoadDir(writeTestChart(t))
	g.Expect(err).NotTo(HaveOccurred())
	install := action.NewInstall(helm)
	install.ReleaseName, install.Namespace = "polykube", ns
	_, err = install.RunWithContext(ctx, ch, map[string]any{})
	g.Expect(err).To(MatchError(ContainSubstring("clusterName is required: set it to the name of this cluster's ClusterMember (helm install ... --set clusterName=NAME)")))

	s := runtime.NewScheme()
	g.Expect(scheme.AddToScheme(s)).To(Succeed())
	g.Expect(apiextensionsv1.AddToScheme(s)).To(Succeed())
	c, err := client.New(cfg, client.Options{Scheme: s})
	g.Expect(err).NotTo(HaveOccurred())
	crds := &apiextensionsv1.CustomResourceDefinitionList{}
	g.Expect(c.List(ctx, crds)).To(Succeed())
	var names []string
	for _, crd := range crds.Items {
		names = append(names, crd.Name)
	}
	g.Expect(names).To(BeEmpty(), "the refused install created CRDs")
	secrets := &corev1.SecretList{}
	g.Expect(c.List(ctx, secrets, client.InNamespace(ns), client.MatchingLabels{"owner": "helm"})).To(Succeed())
	g.Expect(secrets.Items).To(BeEmpty(), "the refused install recorded a Helm release")
}
