// Package crdtrim removes from generated CRDs the descriptions that belong to Kubernetes' own
// types embedded in Polykube's (the Workload's pod template above all), and keeps Polykube's own
// field descriptions and every validation. It runs after controller-gen in `make manifests`.
//
// Why not controller-gen alone: its only knob, crd:maxDescLen, applies to every description,
// Polykube's too; and dropping the embedded schema (x-kubernetes-preserve-unknown-fields) would
// drop its validation. Without this step the Workload CRD is about 600 KB, and a client-side
// `kubectl apply` of it fails because the last-applied annotation would exceed 256 KB.
//
// Which subtrees are "Kubernetes' own" is read from the Go types, not from a list of YAML
// paths: walking a kind's Go type beside its schema, every field whose type is declared outside
// this module (k8s.io/api, apimachinery, …) keeps the description written on the field (it is
// Polykube's doc comment) and loses every description below it. New fields are covered without
// touching this package.
package crdtrim

import (
	"bytes"
	"fmt"
	"reflect"
	"strings"

	"sigs.k8s.io/yaml"
)

// Module is the Go module whose types' descriptions are kept.
const Module = "github.com/polykube/polykube"

// KindTypes maps a CRD's spec.names.kind to the Go type of that kind.
type KindTypes map[string]reflect.Type

// Trim returns crd (one YAML document as controller-gen writes it) without the descriptions of
// embedded foreign types, and how many descriptions it removed.
func Trim(crd []byte, kinds KindTypes) ([]byte, int, error) {
	var doc map[string]any
	if err := yaml.Unmarshal(crd, &doc); err != nil {
		return nil, 0, fmt.Errorf("parse CRD: %w", err)
	}
	spec, _ := doc["spec"].(map[string]any)
	names, _ := spec["names"].(map[string]any)
	kind, _ := names["kind"].(string)
	t, ok := kinds[kind]
	if !ok {
		return nil, 0, fmt.Errorf("CRD of kind %q: no Go type is registered for it", kind)
	}
	versions, _ := spec["versions"].([]any)
	removed := 0
	for _, v := range versions {
		version, _ := v.(map[string]any)
		schema, _ := version["schema"].(map[string]any)
		root, _ := schema["openAPIV3Schema"].(map[string]any)
		if root == nil {
			continue
		}
		removed += walk(root, t)
	}
	out, err := yaml.Marshal(doc)
	if err != nil {
		return nil, 0, err
	}
	// controller-gen starts each file with a document separator; keep the file's shape.
	if bytes.HasPrefix(crd, []byte("---\n")) {
		out = append([]byte("---\n"), out...)
	}
	return out, removed, nil
}

// walk follows the Go type t beside its schema and trims below every foreign-typed field.
func walk(schema map[string]any, t reflect.Type) int {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if foreign(t) {
		return stripBelow(schema)
	}
	switch t.Kind() {
	case reflect.Struct:
		return walkFields(schema, t)
	case reflect.Slice, reflect.Array:
		if items, ok := schema["items"].(map[string]any); ok {
			return walk(items, t.Elem())
		}
	case reflect.Map:
		if ap, ok := schema["additionalProperties"].(map[string]any); ok {
			return walk(ap, t.Elem())
		}
	}
	return 0
}

// walkFields walks the fields of struct t, whose properties are in schema. An inlined struct
// (metav1.TypeMeta on every kind) adds its fields to the same schema: those are walked one by one
// whatever package the struct comes from, so that inlining a foreign type does not trim the
// schema it is inlined into.
func walkFields(schema map[string]any, t reflect.Type) int {
	n := 0
	props, _ := schema["properties"].(map[string]any)
	for i := range t.NumField() {
		f := t.Field(i)
		name, inline := jsonName(f)
		if name == "-" || (!f.IsExported() && !f.Anonymous) {
			continue
		}
		if inline {
			ft := f.Type
			for ft.Kind() == reflect.Pointer {
				ft = ft.Elem()
			}
			if ft.Kind() == reflect.Struct {
				n += walkFields(schema, ft)
			}
			continue
		}
		if p, ok := props[name].(map[string]any); ok {
			n += walk(p, f.Type)
		}
	}
	return n
}

// foreign is true for a named type declared outside Module (builtin types have no package).
func foreign(t reflect.Type) bool {
	return t.PkgPath() != "" && t.PkgPath() != Module && !strings.HasPrefix(t.PkgPath(), Module+"/")
}

func jsonName(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("json")
	name, opts, _ := strings.Cut(tag, ",")
	if strings.Contains(","+opts+",", ",inline,") || (f.Anonymous && name == "") {
		return "", true
	}
	if name == "" {
		name = f.Name
	}
	return name, false
}

// stripBelow deletes "description" from every schema nested in s, keeping s's own.
func stripBelow(s map[string]any) int {
	n := 0
	for key, v := range s {
		switch key {
		case "properties", "patternProperties", "definitions":
			if m, ok := v.(map[string]any); ok {
				for _, child := range m {
					n += stripAll(child)
				}
			}
		case "items", "additionalProperties", "not":
			n += stripAll(v)
		case "allOf", "anyOf", "oneOf":
			if l, ok := v.([]any); ok {
				for _, child := range l {
					n += stripAll(child)
				}
			}
		}
	}
	return n
}

func stripAll(v any) int {
	s, ok := v.(map[string]any)
	if !ok {
		return 0
	}
	n := 0
	if _, ok := s["description"]; ok {
		delete(s, "description")
		n++
	}
	return n + stripBelow(s)
}
