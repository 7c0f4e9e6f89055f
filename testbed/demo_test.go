package testbed

import (
	"context"
	"fmt"
	"io"
	"os"
	"path"
	"testing"

	"github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

func TestDemoManifests_MatchTheExamples(t *testing.T) {
	g := gomega.NewWithT(t)
	for demo, example := range map[string]string{"billing-api": "billing-api", "scaled": "billing-api-scaled", "echo": "billing-api-echo"} {
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

// storyBed records what the demo's story asks of a bed; a bed with traffic also answers calls.
type storyBed struct {
	Bed // nil: a method the story should not call panics
	top *topology.Topology
	log []string
}

func (s *storyBed) rec(format string, args ...any) {
	s.log = append(s.log, fmt.Sprintf(format, args...))
}

func (s *storyBed) Topology() *topology.Topology { return s.top }
func (s *storyBed) Up(context.Context) error     { s.rec("up"); return nil }
func (s *storyBed) Down(context.Context) error   { s.rec("down"); return nil }
func (s *storyBed) AdminConfig(c string) (*rest.Config, error) {
	return nil, fmt.Errorf("%s: not a cluster", c)
}
func (s *storyBed) Commit(_ context.Context, ch gitrepo.Change) (string, error) {
	s.rec("commit %s (%d files)", ch.Message, len(ch.Put))
	return fmt.Sprintf("rev%d", len(s.log)), nil
}
func (s *storyBed) WaitDelivered(_ context.Context, rev string, clusters ...string) error {
	s.rec("delivered %s %v", rev, clusters)
	return nil
}
func (s *storyBed) WaitSlices(_ context.Context, ns, name string, slices map[string]int32) error {
	s.rec("slices %s/%s %v", ns, name, slices)
	return nil
}
func (s *storyBed) Stop(_ context.Context, f Fault, c string) error {
	s.rec("stop %s %s", f, c)
	return nil
}
func (s *storyBed) Start(_ context.Context, f Fault, c string) error {
	s.rec("start %s %s", f, c)
	return nil
}
func (s *storyBed) Fetch(context.Context) { s.rec("fetch") }

type trafficBed struct{ *storyBed }

func (t trafficBed) CallUntil(_ context.Context, _ io.Writer, from string, answering, silent []string) error {
	t.rec("calls from %s answered by %v, none by %v", from, answering, silent)
	return nil
}

// One story, two casts: on a bed without traffic the outage is told with a commit GCP misses
// and fetches on its return; on a bed with traffic with calls from on-prem instead.
func TestDemo_OneStoryOnEveryBed(t *testing.T) {
	g := gomega.NewWithT(t)
	hermetic := &storyBed{top: topology.Default()}
	g.Expect(Demo(context.Background(), hermetic, io.Discard, DemoOptions{})).To(gomega.Succeed())
	g.Expect(hermetic.log).To(gomega.Equal([]string{
		"up",
		"commit workloads: billing-api, 6 in AWS and 4 in GCP, global (3 files)",
		"delivered rev2 []",
		"slices production/billing-api map[aws-eu-central-1:6 gcp-europe-west3:4 onprem-fra:0]",
		"stop apiserver gcp-europe-west3",
		"commit workloads: billing-api, 12 replicas by weight (3 files)",
		"delivered rev6 [aws-eu-central-1 onprem-fra]",
		"slices production/billing-api map[aws-eu-central-1:7 onprem-fra:0]",
		"start apiserver gcp-europe-west3",
		"fetch",
		"delivered rev6 [gcp-europe-west3]",
		"slices production/billing-api map[gcp-europe-west3:5]",
		"down",
	}))

	inCluster := trafficBed{&storyBed{top: topology.Default()}}
	g.Expect(Demo(context.Background(), inCluster, io.Discard, DemoOptions{Keep: true})).To(gomega.Succeed())
	g.Expect(inCluster.log).To(gomega.Equal([]string{
		"up",
		"commit workloads: billing-api, 6 in AWS and 4 in GCP, global (3 files)",
		"delivered rev2 []",
		"slices production/billing-api map[aws-eu-central-1:6 gcp-europe-west3:4 onprem-fra:0]",
		"calls from onprem-fra answered by [aws-eu-central-1 gcp-europe-west3], none by [onprem-fra]",
		"stop apiserver gcp-europe-west3",
		"calls from onprem-fra answered by [aws-eu-central-1], none by [gcp-europe-west3 onprem-fra]",
		"start apiserver gcp-europe-west3",
		"slices production/billing-api map[gcp-europe-west3:4]",
		"calls from onprem-fra answered by [aws-eu-central-1 gcp-europe-west3], none by [onprem-fra]",
	}), "kept: no down")

	other := topology.Default()
	other.Clusters = other.Clusters[:2]
	err := Demo(context.Background(), &storyBed{top: other}, io.Discard, DemoOptions{})
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("this topology has no onprem-fra: run the demo with the default topology")))
}
