package plan

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/status"
)

const workloadDoc = `apiVersion: polykube.kismet.io/v1alpha1
kind: Workload
metadata:
  name: %s
  namespace: shop
spec:
  distribution:
    strategy: Static
    targets:
      - clusterRef: alpha
        replicas: %d
  template: {}
`

func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

func doc(name string, replicas int) string {
	return fmt.Sprintf(workloadDoc, name, replicas)
}

func TestPlan_FindsWorkloadsAndReportsInvalidOnes(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", doc("one", 2)+"---\n"+doc("two", 1))
	writeFile(t, dir, "deep/er/b.yml", doc("three", 3))
	writeFile(t, dir, "c.yaml", doc("one", 5))           // duplicate of a.yaml's
	writeFile(t, dir, ".git/config.yaml", doc("hid", 1)) // hidden directories are skipped
	writeFile(t, dir, "README.md", "not a manifest")
	writeFile(t, dir, "v2.yaml", "apiVersion: polykube.kismet.io/v2\nkind: Workload\nmetadata: {name: future}\n")

	p, err := Plan([]string{dir}, "alpha", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Workloads).To(HaveLen(3))
	g.Expect(p.Workloads[0].Name).To(Equal("one"))
	g.Expect(*p.Workloads[0].Replicas).To(BeEquivalentTo(2))
	g.Expect(*p.Workloads[0].Targeted).To(BeTrue())
	g.Expect(p.Invalid).To(HaveLen(2))
	g.Expect(p.Invalid[0].Reason).To(ContainSubstring("defined twice (first in " + filepath.Join(dir, "a.yaml") + ":1)"))
	g.Expect(p.Invalid[1].Reason).To(ContainSubstring("polykube.kismet.io/v2 is not supported"))
	g.Expect(p.ExitCode).To(Equal(status.ExitInvalidManifest))
}

func TestPlan_MissingPathIsAUsageError(t *testing.T) {
	g := NewWithT(t)
	_, err := Plan([]string{filepath.Join(t.TempDir(), "nope")}, "", LoadOptions{})
	g.Expect(status.IsUsage(err)).To(BeTrue())
}

func TestPlan_NamespaceDefaultChangesTheKey(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFile(t, dir, "w.yaml", "apiVersion: polykube.kismet.io/v1alpha1\nkind: Workload\nmetadata: {name: x}\nspec:\n  distribution: {strategy: Static, targets: [{clusterRef: a, replicas: 1}]}\n  template: {}\n")
	p, err := Plan([]string{dir}, "", LoadOptions{DefaultNamespace: "prod"})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Workloads[0].Namespace).To(Equal("prod"))
}

func TestDiff_AddedRemovedAndUnchanged(t *testing.T) {
	g := NewWithT(t)
	oldDir, newDir := t.TempDir(), t.TempDir()
	writeFile(t, oldDir, "w.yaml", doc("same", 2)+"---\n"+doc("gone", 1)+"---\n"+doc("grows", 1))
	writeFile(t, newDir, "w.yaml", doc("same", 2)+"---\n"+doc("born", 4)+"---\n"+doc("grows", 3))

	d, err := Diff([]string{oldDir}, []string{newDir}, LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(d.Changes).To(HaveLen(3))
	g.Expect(d.Changes[0]).To(And(HaveField("Name", "born"), HaveField("Delta", int32(4)), HaveField("Note", "Workload added")))
	g.Expect(d.Changes[1]).To(And(HaveField("Name", "gone"), HaveField("Delta", int32(-1)), HaveField("Note", "Workload removed")))
	g.Expect(d.Changes[2]).To(And(HaveField("Name", "grows"), HaveField("Delta", int32(2)), HaveField("Note", "")))
	g.Expect(d.ExitCode).To(Equal(status.ExitOK))
}

func TestPlan_Kustomize(t *testing.T) {
	g := NewWithT(t)
	p, err := Plan([]string{filepath.Join("testdata", "plan", "kustomize")}, "", LoadOptions{Kustomize: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Invalid).To(BeEmpty())
	g.Expect(p.Workloads).To(HaveLen(2))
	g.Expect(p.Workloads[0]).To(And(HaveField("Name", "billing-api"), HaveField("Total", int64(12)),
		HaveField("Source", filepath.Join("testdata", "plan", "kustomize")+" (kustomize build):2")))
	g.Expect(p.Workloads[0].Allocation).To(Equal([]status.Share{{Cluster: "alpha", Replicas: 4}, {Cluster: "beta", Replicas: 4}, {Cluster: "gamma", Replicas: 4}}))

	_, err = Plan([]string{filepath.Join("testdata", "plan", "old")}, "", LoadOptions{Kustomize: true})
	g.Expect(status.IsUsage(err)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("kustomize build"))
}

const memberDoc = `apiVersion: polykube.kismet.io/v1alpha1
kind: ClusterMember
metadata:
  name: %s
spec:
  provider: aws
  region: %s
  mesh: {clusterID: %d, podCIDRs: [10.%d.0.0/16]}
`

const selectingDoc = `apiVersion: polykube.kismet.io/v1alpha1
kind: Workload
metadata:
  name: eu-api
  namespace: shop
spec:
  distribution:
    strategy: MultiCloudWeighted
    replicas: 5
    targets:
      - clusterRef: us-1
        replicas: 1
    targetSelectors:
      - labelSelector:
          matchLabels: {polykube.kismet.io/region: eu}
        weight: 1
  template: {}
`

func TestPlan_ResolvesTargetSelectorsOverTheRosterInThePaths(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	writeFile(t, dir, "roster/members.yaml", fmt.Sprintf(memberDoc, "eu-2", "eu", 2, 2)+"---\n"+
		fmt.Sprintf(memberDoc, "us-1", "us", 3, 3)+"---\n"+fmt.Sprintf(memberDoc, "eu-1", "eu", 1, 1))
	writeFile(t, dir, "apps/eu-api.yaml", selectingDoc)

	p, err := Plan([]string{dir}, "eu-1", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Invalid).To(BeEmpty())
	g.Expect(p.Roster).To(Equal([]string{"eu-1", "eu-2", "us-1"}))
	g.Expect(p.Workloads).To(HaveLen(1))
	w := p.Workloads[0]
	g.Expect(w.Targets).To(Equal([]string{"eu-1", "eu-2", "us-1"}))
	g.Expect(w.Allocation).To(Equal([]status.Share{{Cluster: "eu-1", Replicas: 2}, {Cluster: "eu-2", Replicas: 2}, {Cluster: "us-1", Replicas: 1}}))
	g.Expect(*w.Targeted).To(BeTrue())

	// Without the roster's manifests nothing is selected, and the plan says where to look.
	writeFile(t, dir, "only-selectors/w.yaml", strings.Replace(selectingDoc, "    targets:\n      - clusterRef: us-1\n        replicas: 1\n", "", 1))
	p, err = Plan([]string{filepath.Join(dir, "only-selectors")}, "", LoadOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.ExitCode).To(Equal(status.ExitInvalidManifest))
	g.Expect(p.Invalid).To(HaveLen(1))
	g.Expect(p.Invalid[0].Reason).To(ContainSubstring("add the roster's manifests"))
}

// TestPlan_Kustomize_SaysWhatItReads: like Flux, plan -k lets a kustomization read files
// outside its directory and clone remote bases with git. It must say so, naming the files and
// the repositories, so that `plan -k` on a checkout of someone else's branch cannot read or
// fetch anything unseen.
func TestPlan_Kustomize_SaysWhatItReads(t *testing.T) {
	g := NewWithT(t)
	var log bytes.Buffer
	_, err := Plan([]string{filepath.Join("testdata", "plan", "kustomize")}, "", LoadOptions{Kustomize: true, Log: &log})
	g.Expect(err).NotTo(HaveOccurred())
	outside, err := filepath.Abs(filepath.Join("testdata", "plan", "old", "workloads.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(log.String()).To(Equal(fmt.Sprintf("plan -k: kustomize build %s read %s, outside that directory\n",
		filepath.Join("testdata", "plan", "kustomize"), outside)))

	// A remote base: a git repository on disk, cloned through a file:// URL.
	repo := t.TempDir()
	g.Expect(os.WriteFile(filepath.Join(repo, "kustomization.yaml"), []byte("resources:\n  - workloads.yaml\n"), 0o644)).To(Succeed())
	raw, err := os.ReadFile(filepath.Join("testdata", "plan", "old", "workloads.yaml"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(repo, "workloads.yaml"), raw, 0o644)).To(Succeed())
	for _, args := range [][]string{{"init", "-q", "-b", "main"}, {"add", "."}, {"-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-qm", "base"}} {
		out, err := exec.Command("git", append([]string{"-C", repo}, args...)...).CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "git %v: %s", args, out)
	}
	dir := t.TempDir()
	url := "file://" + repo + "?ref=main"
	g.Expect(os.WriteFile(filepath.Join(dir, "kustomization.yaml"), []byte("resources:\n  - "+url+"\n"), 0o644)).To(Succeed())
	log.Reset()
	p, err := Plan([]string{dir}, "", LoadOptions{Kustomize: true, Log: &log})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Workloads).NotTo(BeEmpty())
	g.Expect(log.String()).To(Equal(fmt.Sprintf("plan -k: kustomize build %s cloned the remote base file://%s with git\n", dir, repo)))
}
