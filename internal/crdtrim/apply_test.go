package crdtrim_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/testenv"
)

var crdGVR = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// clientSideApply creates obj as `kubectl apply` (client-side) does when the object is new: the
// object's own JSON, without the annotation, goes into the last-applied-configuration annotation
// (kubectl's GetModifiedConfiguration), and the object is created with it. The API server bounds
// all annotations of an object to 256 KiB together, which is what failed for the 600 KB CRD.
func clientSideApply(ctx context.Context, dyn dynamic.Interface, obj *unstructured.Unstructured) error {
	obj = obj.DeepCopy()
	annotations := obj.GetAnnotations()
	delete(annotations, lastApplied)
	obj.SetAnnotations(annotations)
	modified, err := json.Marshal(obj.Object)
	if err != nil {
		return err
	}
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[lastApplied] = string(modified)
	obj.SetAnnotations(annotations)
	_, err = dyn.Resource(crdGVR).Create(ctx, obj, metav1.CreateOptions{})
	return err
}

func readCRD(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	obj := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	return obj
}

// Every generated CRD installs with a client-side apply on a real API server, the way most
// users install CRDs; an object whose last-applied annotation would exceed the limit (as the
// untrimmed Workload CRD did) is refused by the same procedure, so the check can fail.
func TestCRDs_ClientSideApplyOnARealAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	assets, err := testenv.AssetsDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 3 * time.Minute}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	dyn := dynamic.NewForConfigOrDie(cfg)

	files, err := filepath.Glob(filepath.Join(testenv.CRDDir(), "*.yaml"))
	if err != nil || len(files) != 5 {
		t.Fatalf("want the 5 Polykube CRDs in %s, got %v (%v)", testenv.CRDDir(), files, err)
	}
	for _, f := range files {
		if err := clientSideApply(ctx, dyn, readCRD(t, f)); err != nil {
			t.Errorf("client-side apply of %s: %v", filepath.Base(f), err)
		}
	}

	// The same procedure refuses an object as large as the untrimmed Workload CRD.
	big := readCRD(t, filepath.Join(testenv.CRDDir(), "polykube.kismet.io_workloads.yaml"))
	big.SetName("bigs.polykube.kismet.io")
	_ = unstructured.SetNestedField(big.Object, "bigs", "spec", "names", "plural")
	_ = unstructured.SetNestedField(big.Object, "Big", "spec", "names", "kind")
	_ = unstructured.SetNestedField(big.Object, "BigList", "spec", "names", "listKind")
	_ = unstructured.SetNestedField(big.Object, "big", "spec", "names", "singular")
	unstructured.RemoveNestedField(big.Object, "spec", "names", "shortNames")
	versions, _, _ := unstructured.NestedSlice(big.Object, "spec", "versions")
	v0 := versions[0].(map[string]any)
	_ = unstructured.SetNestedField(v0, strings.Repeat("a long description ", 16<<10), "schema", "openAPIV3Schema", "description")
	_ = unstructured.SetNestedSlice(big.Object, versions, "spec", "versions")
	err = clientSideApply(ctx, dyn, big)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.annotations") {
		t.Errorf("a CRD over 256 KB: client-side apply err = %v, want Invalid on metadata.annotations (too long)", err)
	}
}

// When a kubectl is installed, the real client-side apply is run too, against the same kind of
// API server. This is in addition to the test above, which always runs.
func TestCRDs_KubectlApply(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("no kubectl on PATH; TestCRDs_ClientSideApplyOnARealAPIServer covers what kubectl does")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	assets, err := testenv.AssetsDir(ctx)
	if err != nil {
		t.Fatal(err)
	}
	env := &envtest.Environment{BinaryAssetsDirectory: assets, ControlPlaneStartTimeout: 3 * time.Minute}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	user, err := env.AddUser(envtest.User{Name: "admin", Groups: []string{"system:masters"}}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := user.KubeConfig()
	if err != nil {
		t.Fatal(err)
	}
	kcPath := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kcPath, kc, 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, kubectl, "--kubeconfig", kcPath, "apply", "-f", testenv.CRDDir()).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl apply -f %s: %v\n%s", testenv.CRDDir(), err, out)
	}
	if !strings.Contains(string(out), "workloads.polykube.kismet.io created") {
		t.Errorf("kubectl apply output does not show the Workload CRD created:\n%s", out)
	}
}
