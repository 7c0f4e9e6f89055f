package crdtrim_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/crdtrim"
)

func kinds() crdtrim.KindTypes {
	return crdtrim.KindTypes{
		"Workload":        reflect.TypeFor[polykubev1alpha1.Workload](),
		"ServiceEndpoint": reflect.TypeFor[polykubev1alpha1.ServiceEndpoint](),
	}
}

// A small CRD shaped as controller-gen writes it: a Polykube field with its own description
// whose type is Kubernetes' (template), and inlined TypeMeta fields at the root.
const sample = `---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: workloads.polykube.kismet.io
spec:
  names:
    kind: Workload
  versions:
  - name: v1alpha1
    schema:
      openAPIV3Schema:
        description: Workload is ours.
        properties:
          apiVersion:
            description: APIVersion defines the versioned schema.
            type: string
          spec:
            description: WorkloadSpec is ours.
            properties:
              template:
                description: Template is the pod template of the Deployment.
                properties:
                  spec:
                    description: Specification of the desired behavior of the pod.
                    properties:
                      containers:
                        description: List of containers.
                        items:
                          description: A single application container.
                          properties:
                            name:
                              description: Name of the container.
                              maxLength: 63
                              type: string
                          required:
                          - name
                          type: object
                        type: array
                    type: object
                type: object
            type: object
        type: object
`

func TestTrim_DropsEmbeddedDescriptionsKeepsOursAndValidation(t *testing.T) {
	out, n, err := crdtrim.Trim([]byte(sample), kinds())
	if err != nil {
		t.Fatal(err)
	}
	got := string(out)
	for _, kept := range []string{"Workload is ours.", "WorkloadSpec is ours.", "Template is the pod template", "APIVersion defines", "maxLength: 63", "- name"} {
		if !strings.Contains(got, kept) {
			t.Errorf("output lost %q:\n%s", kept, got)
		}
	}
	for _, gone := range []string{"Specification of the desired", "List of containers", "A single application", "Name of the container"} {
		if strings.Contains(got, gone) {
			t.Errorf("output still has %q", gone)
		}
	}
	if n != 4 {
		t.Errorf("removed %d descriptions, want 4", n)
	}
	if !strings.HasPrefix(got, "---\n") {
		t.Errorf("output lost controller-gen's leading document separator")
	}
}

func TestTrim_UnknownKindIsAnError(t *testing.T) {
	_, _, err := crdtrim.Trim([]byte(strings.Replace(sample, "kind: Workload", "kind: Gadget", 1)), kinds())
	if err == nil || !strings.Contains(err.Error(), `"Gadget"`) {
		t.Fatalf("err = %v, want one naming the kind", err)
	}
}

// The generated Workload CRD, as committed: small enough for a client-side apply, already
// trimmed (make verify regenerates it and fails on a difference), with Polykube's own
// descriptions.
func TestGeneratedWorkloadCRD(t *testing.T) {
	path := filepath.Join("..", "..", "operator", "config", "crd", "bases", "polykube.kismet.io_workloads.yaml")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// What a client-side apply stores is the object's compact JSON in the last-applied
	// annotation (see clientSideApply), and the API server bounds an object's annotations to
	// 256 KiB together; the indented YAML of the file is larger than that JSON. The bound keeps a
	// quarter of the limit free.
	var obj map[string]any
	if err := yaml.Unmarshal(data, &obj); err != nil {
		t.Fatal(err)
	}
	compact, err := json.Marshal(obj)
	if err != nil {
		t.Fatal(err)
	}
	if len(compact) > 192*1024 {
		t.Errorf("%s is %d KB as JSON (%d KB as YAML); client-side kubectl apply stores the JSON in an annotation and needs it well under 256 KB (run make manifests)",
			path, len(compact)/1024, len(data)/1024)
	}
	again, n, err := crdtrim.Trim(data, kinds())
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%s still has %d descriptions of embedded Kubernetes types: run make manifests", path, n)
	}
	var a, b map[string]any
	if err := yaml.Unmarshal(data, &a); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(again, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Error("trimming the committed CRD again changed it")
	}
	for _, doc := range []string{"Distribution says how many replicas run in which cluster", "Template is the pod template"} {
		if !strings.Contains(string(data), doc) {
			t.Errorf("Polykube's own description %q is missing from the CRD", doc)
		}
	}
}

// Only descriptions go: with every description removed from both, input and output are equal.
func TestTrim_KeepsEverythingButDescriptions(t *testing.T) {
	out, _, err := crdtrim.Trim([]byte(sample), kinds())
	if err != nil {
		t.Fatal(err)
	}
	var in, got map[string]any
	if err := yaml.Unmarshal([]byte(sample), &in); err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(out, &got); err != nil {
		t.Fatal(err)
	}
	dropAll(in)
	dropAll(got)
	if !reflect.DeepEqual(in, got) {
		t.Errorf("more than descriptions changed:\nin:  %v\nout: %v", in, got)
	}
}

func dropAll(v any) {
	switch x := v.(type) {
	case map[string]any:
		if _, ok := x["description"].(string); ok {
			delete(x, "description")
		}
		for _, c := range x {
			dropAll(c)
		}
	case []any:
		for _, c := range x {
			dropAll(c)
		}
	}
}
