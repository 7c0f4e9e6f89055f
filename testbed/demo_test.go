package testbed

import (
	"os"
	"path"
	"testing"

	"github.com/onsi/gomega"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

func TestDemoManifests_MatchTheExamples(t *testing.T) {
	g := gomega.NewWithT(t)
	for demo, example := range map[string]string{"billing-api": "billing-api", "scaled": "billing-api-scaled"} {
		entries, err := demoFS.ReadDir(path.Join("demo", demo))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(entries).To(gomega.HaveLen(3))
		for _, e := range entries {
			embedded, _ := demoFS.ReadFile(path.Join("demo", demo, e.Name()))
			onDisk, err := os.ReadFile(path.Join("../examples/local-multicluster", example, e.Name()))
			g.Expect(err).NotTo(gomega.HaveOccurred())
			g.Expect(string(onDisk)).To(gomega.Equal(string(embedded)), "examples/local-multicluster/%s/%s", example, e.Name())
		}
	}
}

func workload(t *testing.T, dir string) *polykubev1alpha1.Workload {
	t.Helper()
	data, err := demoFS.ReadFile(path.Join("demo", dir, "workload.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	w := &polykubev1alpha1.Workload{}
	if err := yaml.UnmarshalStrict(data, w); err != nil {
		t.Fatalf("%s/workload.yaml: %v", dir, err)
	}
	return w
}

func TestDemoManifests_TellTheStory(t *testing.T) {
	g := gomega.NewWithT(t)
	alloc, err := placement.ForWorkload(workload(t, "billing-api"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(share(alloc, DemoAWS)).To(gomega.Equal(int32(6)))
	g.Expect(share(alloc, DemoGCP)).To(gomega.Equal(int32(4)))
	g.Expect(share(alloc, DemoOnprem)).To(gomega.BeZero())

	alloc, err = placement.ForWorkload(workload(t, "scaled"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(share(alloc, DemoAWS)).To(gomega.Equal(int32(7)))
	g.Expect(share(alloc, DemoGCP)).To(gomega.Equal(int32(5)))
}

func share(a placement.Allocation, cluster string) int32 {
	n, _ := a.For(cluster)
	return n
}
