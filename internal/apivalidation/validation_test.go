package apivalidation_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/testenv"
)

// k8sClient talks to a real kube-apiserver with the generated CRDs installed.
var k8sClient client.Client

func TestMain(m *testing.M) {
	ctx := context.Background()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: %v\n", err)
		os.Exit(1)
	}
	k8sClient, err = client.New(env.Config, client.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "FAIL: client: %v\n", err)
		_ = env.Stop()
		os.Exit(1)
	}
	code := m.Run()
	if err := env.Stop(); err != nil {
		fmt.Fprintf(os.Stderr, "stop test API server: %v\n", err)
	}
	os.Exit(code)
}

// readObjects decodes every YAML document of a file.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			t.Fatalf("%s: decode: %v", path, err)
		}
		if len(u.Object) > 0 {
			out = append(out, u)
		}
	}
	return out
}

// expectations returns the "# expect: ..." lines of a corpus file.
func expectations(t *testing.T, path string) []string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		if v, ok := strings.CutPrefix(s.Text(), "# expect: "); ok {
			out = append(out, strings.TrimSpace(v))
		}
	}
	return out
}

func ensureNamespace(t *testing.T, name string) {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8sClient.Create(context.Background(), ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create namespace %s: %v", name, err)
	}
}

func TestCRDs_AcceptValidManifests(t *testing.T) {
	files, _ := filepath.Glob("testdata/valid/*.yaml")
	if len(files) == 0 {
		t.Fatal("no valid manifests found in testdata/valid")
	}
	for _, f := range files {
		for _, obj := range readObjects(t, f) {
			t.Run(filepath.Base(f)+"/"+obj.GetKind()+"/"+obj.GetName(), func(t *testing.T) {
				if ns := obj.GetNamespace(); ns != "" {
					ensureNamespace(t, ns)
				}
				if err := k8sClient.Create(context.Background(), obj.DeepCopy(), client.DryRunAll); err != nil {
					t.Fatalf("a valid manifest was rejected: %v", err)
				}
			})
		}
	}
}

func TestCRDs_RejectInvalidManifests(t *testing.T) {
	files, _ := filepath.Glob("testdata/invalid/*.yaml")
	if len(files) < 30 {
		t.Fatalf("the invalid corpus has %d manifests; keep at least 30", len(files))
	}
	kinds := map[string]int{}
	for _, f := range files {
		want := expectations(t, f)
		objs := readObjects(t, f)
		if len(want) == 0 || len(objs) != 1 {
			t.Fatalf("%s: each corpus file needs one object and at least one '# expect:' line", f)
		}
		obj := objs[0]
		kinds[obj.GetKind()]++
		t.Run(strings.TrimSuffix(filepath.Base(f), ".yaml"), func(t *testing.T) {
			ctx := context.Background()
			err := k8sClient.Create(ctx, obj.DeepCopy())
			if err == nil {
				_ = k8sClient.Delete(ctx, obj)
				t.Fatalf("the API server accepted an invalid %s", obj.GetKind())
			}
			if !apierrors.IsInvalid(err) {
				t.Fatalf("want an Invalid error, got %v", err)
			}
			for _, w := range want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("rejection message does not name %q:\n%v", w, err)
				}
			}
			// Nothing in the cluster changed.
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(obj.GroupVersionKind())
			if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(obj), got); !apierrors.IsNotFound(err) {
				t.Fatalf("a rejected object exists in the cluster (err=%v)", err)
			}
		})
	}
	for _, k := range []string{"ClusterMember", "Federation", "Workload", "ServiceEndpoint", "DatastoreBinding"} {
		if kinds[k] == 0 {
			t.Errorf("the invalid corpus has no %s", k)
		}
	}
}
