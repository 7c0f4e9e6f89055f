package examplestest

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/placement"
)

func examplesDir() string { return filepath.Join(testenv.RepoRoot(), "examples") }

// walkExamples returns the files under examples/ for which keep returns true, sorted.
func walkExamples(t *testing.T, keep func(path string) bool) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(examplesDir(), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".terraform" || strings.HasPrefix(d.Name(), ".")) && path != examplesDir() {
			return filepath.SkipDir
		}
		if !d.IsDir() && keep(path) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", examplesDir(), err)
	}
	return files
}

func isYAML(path string) bool {
	return strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")
}

func rel(path string) string {
	r, err := filepath.Rel(testenv.RepoRoot(), path)
	if err != nil {
		return path
	}
	return r
}

// TestExamples_EveryYAMLFileIsValid sends every object of every YAML file under examples/ to
// the API server (dry run, strict). Tool configuration files (kustomization.yaml, testbed
// topologies) are parsed strictly and left to their tools.
func TestExamples_EveryYAMLFileIsValid(t *testing.T) {
	files := walkExamples(t, isYAML)
	if len(files) == 0 {
		t.Fatalf("no YAML files under %s", examplesDir())
	}
	var objects int
	for _, f := range files {
		t.Run(rel(f), func(t *testing.T) {
			g := NewWithT(t)
			docs, err := readDocs(f)
			g.Expect(err).NotTo(HaveOccurred())
			for _, d := range docs {
				if reason := configReason(d); reason != "" {
					t.Logf("%s: %s; not an API object, parsed only", d, reason)
					continue
				}
				objects++
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				g.Expect(dryRun(ctx, d)).To(Succeed())
				cancel()
			}
		})
	}
	t.Logf("%d objects from %d files accepted by the API server", objects, len(files))
}

// TestExamples_KustomizationsBuild builds every kustomization under examples/ (as Flux and
// Argo CD would) and sends the built objects to the API server.
func TestExamples_KustomizationsBuild(t *testing.T) {
	files := walkExamples(t, func(path string) bool {
		switch filepath.Base(path) {
		case "kustomization.yaml", "kustomization.yml", "Kustomization":
			return true
		}
		return false
	})
	if len(files) == 0 {
		t.Fatalf("no kustomization.yaml under %s", examplesDir())
	}
	for _, f := range files {
		dir := filepath.Dir(f)
		t.Run(rel(dir), func(t *testing.T) {
			g := NewWithT(t)
			k := krusty.MakeKustomizer(krusty.MakeDefaultOptions())
			resMap, err := k.Run(filesys.MakeFsOnDisk(), dir)
			g.Expect(err).NotTo(HaveOccurred(), "kustomize build %s", rel(dir))
			out, err := resMap.AsYaml()
			g.Expect(err).NotTo(HaveOccurred())
			docs, err := splitDocs("kustomize build "+rel(dir), out)
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(docs).NotTo(BeEmpty(), "kustomize build %s produced nothing", rel(dir))
			for _, d := range docs {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				g.Expect(dryRun(ctx, d)).To(Succeed())
				cancel()
			}
		})
	}
}

// articleWorkload is the placement manifest of the article that introduced Polykube
// (/work/shared/seeds/001_*.txt), character for character except kind: WorkloadPlacement is
// kind: Workload.
const articleWorkload = `apiVersion: polykube.kismet.io/v1alpha1
kind: Workload
metadata:
  name: billing-api
  namespace: production
spec:
  # Стратегия балансировки подов между провайдерами
  distribution:
    strategy: MultiCloudWeighted
    targets:
      - clusterRef: aws-eu-central-1
        replicas: 6
        weight: 60
      - clusterRef: gcp-europe-west3
        replicas: 4
        weight: 40
  template:
    spec:
      containers:
        - name: api
          image: registry.example.com/billing:v3.2.0
          ports:
            - containerPort: 8080
          resources:
            requests:
              cpu: 300m
              memory: 512Mi
`

// TestExamples_ArticleWorkloadAsWritten checks that the article's manifest is accepted as
// written, allocates 6 replicas to aws-eu-central-1 and 4 to gcp-europe-west3, and is the
// billing-api Workload the aws-gcp example delivers.
func TestExamples_ArticleWorkloadAsWritten(t *testing.T) {
	g := NewWithT(t)
	docs, err := splitDocs("article", []byte(articleWorkload))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(docs).To(HaveLen(1))

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	g.Expect(dryRun(ctx, docs[0])).To(Succeed())

	var w polykubev1alpha1.Workload
	g.Expect(runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(docs[0].Obj.Object, &w, true)).To(Succeed())
	alloc, err := placement.ForWorkload(&w)
	g.Expect(err).NotTo(HaveOccurred())
	for cluster, want := range map[string]int32{"aws-eu-central-1": 6, "gcp-europe-west3": 4} {
		got, ok := alloc.For(cluster)
		g.Expect(ok).To(BeTrue(), "%s is a target", cluster)
		g.Expect(got).To(Equal(want), "replicas for %s", cluster)
	}

	example := filepath.Join(examplesDir(), "aws-gcp", "gitops", "workloads", "production", "billing-api.yaml")
	data, err := os.ReadFile(example)
	g.Expect(err).NotTo(HaveOccurred())
	exampleDocs, err := splitDocs(example, data)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(exampleDocs).To(HaveLen(1))
	g.Expect(exampleDocs[0].Obj.Object).To(Equal(docs[0].Obj.Object),
		"%s must be the article's manifest (comments aside)", rel(example))
}
