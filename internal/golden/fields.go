package golden

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Updating reports whether the test runs with -update, for tests that write their golden files
// themselves (AssertFields).
func Updating() bool { return *update }

// FieldDiff is one field that differs between a golden YAML document and the output: its path
// (map keys joined by ".", list indices in brackets) and both values, rendered as YAML; "<none>"
// for a side that does not have the field.
type FieldDiff struct {
	Path      string
	Want, Got string
}

// AssertFields compares got, marshalled to YAML, with testdata/<name> field by field (or
// rewrites the file with -update), and returns every field that differs, sorted by path, so
// that the caller can say what each difference means. It fails the test itself only when the
// golden file is missing or unreadable; a caller that finds no meaning in a difference should
// still fail with it.
func AssertFields(t testing.TB, name string, got any) []FieldDiff {
	t.Helper()
	b, err := yaml.Marshal(got)
	if err != nil {
		t.Fatalf("marshal %s: %v", name, err)
	}
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return nil
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden file %s: %v (run the test with -update to create it)", path, err)
	}
	var w, g any
	if err := yaml.Unmarshal(want, &w); err != nil {
		t.Fatalf("golden file %s is not YAML: %v (run the test with -update to rewrite it)", path, err)
	}
	if err := yaml.Unmarshal(b, &g); err != nil {
		t.Fatalf("output for %s is not YAML: %v", path, err)
	}
	var out []FieldDiff
	diffValues("", w, g, &out)
	sort.Slice(out, func(i, j int) bool { return out[i].Path < out[j].Path })
	return out
}

func diffValues(path string, want, got any, out *[]FieldDiff) {
	wm, wok := want.(map[string]any)
	gm, gok := got.(map[string]any)
	if wok && gok {
		keys := map[string]bool{}
		for k := range wm {
			keys[k] = true
		}
		for k := range gm {
			keys[k] = true
		}
		for k := range keys {
			wv, win := wm[k]
			gv, gin := gm[k]
			p := join(path, k)
			switch {
			case !win:
				*out = append(*out, FieldDiff{Path: p, Want: "<none>", Got: render(gv)})
			case !gin:
				*out = append(*out, FieldDiff{Path: p, Want: render(wv), Got: "<none>"})
			default:
				diffValues(p, wv, gv, out)
			}
		}
		return
	}
	wl, wok := want.([]any)
	gl, gok := got.([]any)
	if wok && gok && len(wl) == len(gl) {
		for i := range wl {
			diffValues(fmt.Sprintf("%s[%d]", path, i), wl[i], gl[i], out)
		}
		return
	}
	if !reflect.DeepEqual(want, got) {
		*out = append(*out, FieldDiff{Path: path, Want: render(want), Got: render(got)})
	}
}

func join(path, key string) string {
	if strings.ContainsAny(key, ".[]") {
		key = "[" + key + "]"
		return path + key
	}
	if path == "" {
		return key
	}
	return path + "." + key
}

func render(v any) string {
	b, err := yaml.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSpace(string(b))
}
