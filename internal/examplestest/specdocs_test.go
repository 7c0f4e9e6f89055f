package examplestest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/testenv"
)

func specDocsDir() string { return filepath.Join(testenv.RepoRoot(), "docs", "spec", "v1alpha1") }

// fencedYAML returns the ```yaml blocks of a Markdown file.
var fencedYAML = regexp.MustCompile("(?ms)^```ya?ml\\n(.*?)^```")

// TestSpecDocs_ExamplesAreAccepted sends every complete object (a yaml block starting with
// apiVersion) of the API reference pages to the API server, so the documented examples stay valid.
func TestSpecDocs_ExamplesAreAccepted(t *testing.T) {
	pages, err := filepath.Glob(filepath.Join(specDocsDir(), "*.md"))
	if err != nil || len(pages) == 0 {
		t.Fatalf("no API reference pages under %s (err %v)", specDocsDir(), err)
	}
	var objects int
	for _, page := range pages {
		t.Run(rel(page), func(t *testing.T) {
			g := NewWithT(t)
			data, err := os.ReadFile(page)
			g.Expect(err).NotTo(HaveOccurred())
			for i, m := range fencedYAML.FindAllSubmatch(data, -1) {
				if !strings.HasPrefix(string(m[1]), "apiVersion:") {
					continue // a fragment of a spec, not an object
				}
				docs, err := splitDocs(fmt.Sprintf("%s yaml block %d", rel(page), i+1), m[1])
				g.Expect(err).NotTo(HaveOccurred())
				for _, d := range docs {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					g.Expect(dryRun(ctx, d)).To(Succeed())
					cancel()
					objects++
				}
			}
		})
	}
	if objects == 0 {
		t.Fatalf("no example objects in %s", specDocsDir())
	}
}

// TestSpecDocs_DocumentEveryField checks that each CRD has its page, docs/spec/v1alpha1/<plural>.md,
// and that the page names every field of the CRD's spec and status (as `field`), so a field
// added to the API without documentation fails here.
func TestSpecDocs_DocumentEveryField(t *testing.T) {
	crds, err := filepath.Glob(filepath.Join(testenv.CRDDir(), "polykube.kismet.io_*.yaml"))
	if err != nil || len(crds) == 0 {
		t.Fatalf("no CRDs under %s (err %v)", testenv.CRDDir(), err)
	}
	for _, f := range crds {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.UnmarshalStrict(data, &crd); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		plural := crd.Spec.Names.Plural
		t.Run(plural, func(t *testing.T) {
			g := NewWithT(t)
			page := filepath.Join(specDocsDir(), plural+".md")
			doc, err := os.ReadFile(page)
			g.Expect(err).NotTo(HaveOccurred(), "every kind needs its page %s", rel(page))
			g.Expect(string(doc)).To(ContainSubstring("# "+crd.Spec.Names.Kind), "the page is titled after the kind")

			root := crd.Spec.Versions[0].Schema.OpenAPIV3Schema
			fields := map[string]bool{}
			for _, top := range []string{"spec", "status"} {
				s := root.Properties[top]
				collectFields(&s, top, fields)
			}
			var missing []string
			for path := range fields {
				// In code: `name`, `name.sub`, `name[]`, `name: value`, `parent.name`.
				name := path[strings.LastIndex(path, ".")+1:]
				mention := regexp.MustCompile("`([\\w\\[\\].]*\\.)?" + regexp.QuoteMeta(name) + "[`.\\[:]")
				if !mention.Match(doc) {
					missing = append(missing, path)
				}
			}
			sort.Strings(missing)
			g.Expect(missing).To(BeEmpty(), "%s does not mention these fields (write each as `name`)", rel(page))
		})
	}
}

// embeddedTypes are the fields holding embedded Kubernetes types, which have their own
// reference: by name (the pod template, conditions) or, where the name alone is too common, by
// the end of the path (a Workload override's env vars, tolerations and label selector, the HPA
// metrics and behavior of spec.autoscaling).
var embeddedTypes = []string{".template", ".conditions",
	".overrides.env.set", ".overrides.tolerations", ".overrides.clusterSelector.labelSelector",
	".autoscaling.metrics", ".autoscaling.behavior"}

// collectFields adds the dotted path of every property under s. It does not descend into
// embedded Kubernetes types (embeddedTypes); the field holding one is still collected.
func collectFields(s *apiextensionsv1.JSONSchemaProps, path string, out map[string]bool) {
	if s.Items != nil && s.Items.Schema != nil {
		s = s.Items.Schema
	}
	for name, p := range s.Properties {
		child := path + "." + name
		out[child] = true
		if slices.ContainsFunc(embeddedTypes, func(e string) bool { return strings.HasSuffix(child, e) }) {
			continue
		}
		collectFields(&p, child, out)
	}
}
