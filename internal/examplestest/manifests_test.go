package examplestest

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"
)

// configGroups are API groups of files that configure tools rather than describe objects an
// API server stores. Such documents are parsed (strictly) but not sent to the API server; the
// tool that reads them checks them (kustomize build, polykube-testbed, kind, kwokctl).
var configGroups = map[string]string{
	"kustomize.config.k8s.io":    "kustomize configuration, checked by building it",
	"testbed.polykube.kismet.io": "polykube-testbed topology, checked by the testbed's loader",
	"kind.x-k8s.io":              "kind cluster configuration",
	"config.kwok.x-k8s.io":       "kwok configuration",
}

// doc is one YAML document and where it came from.
type doc struct {
	Source string // file path and document index, for messages
	Obj    *unstructured.Unstructured
}

func (d doc) String() string {
	return fmt.Sprintf("%s (%s %q)", d.Source, d.Obj.GetObjectKind().GroupVersionKind().GroupKind(), d.Obj.GetName())
}

// readDocs reads every non-empty document of a YAML file.
func readDocs(path string) ([]doc, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return splitDocs(rel(path), data)
}

// splitDocs parses a multi-document YAML stream strictly (duplicate keys are errors) into
// objects; documents holding only comments are skipped.
func splitDocs(source string, data []byte) ([]doc, error) {
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs []doc
	for i := 0; ; i++ {
		raw, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		js, err := yaml.YAMLToJSONStrict(raw)
		if err != nil {
			return nil, fmt.Errorf("%s: document %d: %w", source, i, err)
		}
		if bytes.Equal(bytes.TrimSpace(js), []byte("null")) {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(js); err != nil {
			return nil, fmt.Errorf("%s: document %d is not a Kubernetes object (apiVersion and kind are required): %w", source, i, err)
		}
		docs = append(docs, doc{Source: fmt.Sprintf("%s#%d", source, i), Obj: obj})
	}
}

// configReason says why a document is a tool's configuration rather than an API object, or
// returns "" for API objects.
func configReason(d doc) string {
	return configGroups[d.Obj.GroupVersionKind().Group]
}

// dryRun sends the object to the API server as a create with dryRun=All and strict field
// validation: schema, CEL rules, enums, defaults and unknown fields are all checked, nothing is
// stored. Namespaces the object needs are created for real first.
func dryRun(ctx context.Context, d doc) error {
	obj := d.Obj.DeepCopy()
	gvk := obj.GroupVersionKind()
	mapping, err := k8sClient.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return fmt.Errorf("%s: the API server serves no %s: if it is an API object, install its CRD in TestMain; if it is a tool's configuration, add its group to configGroups", d, gvk)
	}
	if err != nil {
		return fmt.Errorf("%s: look up %s: %w", d, gvk, err)
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		if obj.GetNamespace() == "" {
			obj.SetNamespace(metav1.NamespaceDefault)
		}
		if err := ensureNamespace(ctx, obj.GetNamespace()); err != nil {
			return fmt.Errorf("%s: %w", d, err)
		}
	}
	err = k8sClient.Create(ctx, obj, client.DryRunAll, client.FieldValidation(metav1.FieldValidationStrict))
	if apierrors.IsAlreadyExists(err) && gvk.Group == "" && gvk.Kind == "Namespace" {
		// ensureNamespace created it for an earlier object; a Namespace has no spec to check.
		return nil
	}
	if err != nil {
		return fmt.Errorf("%s: the API server refused it: %w", d, err)
	}
	return nil
}

func ensureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := k8sClient.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %q: %w", name, err)
	}
	return nil
}
