package harness

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/incluster"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// The federation of an in-cluster bed's faults, mesh check, probe and diagnostics, as its dry run
// prints them: the commands and API actions a kind run performs.
func TestBedFederation_DatapathDryRunPlan(t *testing.T) {
	g := NewWithT(t)
	top, err := topology.Load("../../topology-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	b, err := incluster.Open(incluster.Options{Topology: top, Dir: "/run/scenarios-kind", SourceDir: "../../..", DryRun: true, Log: &out})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	g.Expect(b.Up(ctx)).To(Succeed(), out.String())
	f := newBedFederation(b)
	d, ok := f.datapath()
	g.Expect(ok).To(BeTrue(), "the in-cluster bed is a Datapath")

	g.Expect(f.Provider()).To(Equal("kind"))
	g.Expect(f.Clusters()).To(Equal([]string{"alpha", "beta", "gamma"}))
	g.Expect(HasCapability(f, CapabilityDatapath)).To(BeTrue())
	g.Expect(CheckClusters(f, []string{"alpha", "beta", "gamma"})).To(Succeed())
	g.Expect(f.Git().Dir()).To(Equal("workloads"))

	plan := func(what string, fn func() error) string {
		t.Helper()
		out.Reset()
		g.Expect(fn()).To(Succeed(), what)
		return out.String()
	}
	faults := f.Faults()
	g.Expect(plan("stop", func() error { return faults.Stop(ctx, testbed.FaultAPIServer, "beta") })).To(Equal(
		" • stop apiserver beta\n  $ docker stop beta-control-plane\n ✓ stop apiserver beta\n"))
	g.Expect(plan("start", func() error { return faults.Start(ctx, testbed.FaultAPIServer, "beta") })).To(Equal(
		" • start apiserver beta\n" +
			"  $ docker start beta-control-plane\n" +
			"  # wait until Deployment polykube-system/polykube-operator is available in kind-beta\n" +
			" ✓ start apiserver beta\n"))
	g.Expect(plan("kill", func() error { return faults.Stop(ctx, testbed.FaultOperator, "gamma") })).To(
		ContainSubstring("in kind-gamma: annotate Deployment polykube-system/polykube-operator kustomize.toolkit.fluxcd.io/reconcile=disabled, scale it to 0"))
	g.Expect(plan("restart", func() error { return faults.Start(ctx, testbed.FaultOperator, "gamma") })).To(
		ContainSubstring("wait until Deployment polykube-system/polykube-operator is available in kind-gamma"))
	g.Expect(plan("stop git", func() error { return faults.Stop(ctx, testbed.FaultGit, "") })).To(ContainSubstring("stop the Git server process"))
	g.Expect(plan("start git", func() error { return faults.Start(ctx, testbed.FaultGit, "") })).To(ContainSubstring("start the Git server process again"))
	g.Expect(faults.Stop(ctx, testbed.FaultAPIServer, "delta")).To(MatchError(ContainSubstring(`no cluster "delta" in the federation`)))

	mesh := plan("mesh", func() error { return d.MeshReady(ctx) })
	g.Expect(mesh).To(ContainSubstring("wait until every Cilium agent of every cluster reports the other clusters ready (cilium-dbg status -o json in each agent)"))
	g.Expect(mesh).NotTo(ContainSubstring("cilium clustermesh"), "no cilium CLI")

	call := plan("call", func() error {
		answers, err := d.Call(ctx, "beta", "scn-1234", "echo", 60)
		g.Expect(answers).To(BeEmpty(), "a dry run calls nothing")
		return err
	})
	g.Expect(call).To(ContainSubstring("run in kind-beta, then read its pod's log:"))
	g.Expect(call).To(MatchRegexp(`- --url\n.*- http://echo\.scn-1234\.svc\.cluster\.local\./\n.*- --count\n.*- "60"\n`))
	g.Expect(call).To(ContainSubstring("namespace: scn-1234"))

	tmpl := d.EchoTemplate()
	g.Expect(tmpl.Spec.Containers).To(HaveLen(1))
	// topology-kind.yaml runs the registry add-on: the echo server is the Polykube image the
	// nodes pull from the test bed's registry, by digest (a dry run's placeholders).
	g.Expect(tmpl.Spec.Containers[0].Image).To(Equal("172.18.0.1:<port>/polykube/polykube@sha256:<digest>"),
		"the Polykube image the bed pushed to its registry")
	g.Expect(tmpl.Spec.Containers[0].Ports[0].ContainerPort).To(Equal(int32(8080)), "Datapath.EchoTemplate answers on 8080")

	diag := plan("diagnose", func() error {
		dir, err := f.Diagnose(ctx, filepath.Join(t.TempDir(), "bundle"))
		g.Expect(dir).To(HaveSuffix("bundle"))
		return err
	})
	g.Expect(strings.Count(diag, "write cilium-dbg status --verbose of every agent in kind-")).To(Equal(3))
	g.Expect(diag).To(ContainSubstring("flux logs --all-namespaces --context kind-gamma"))

	g.Expect(plan("close", func() error { return f.Close(ctx) })).To(ContainSubstring("delete kind cluster alpha"))
}

func TestBedFederation_DatapathOperatorConfigNeedsARun(t *testing.T) {
	g := NewWithT(t)
	top, err := topology.Load("../../topology-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	b, err := incluster.Open(incluster.Options{Topology: top, Dir: t.TempDir(), SourceDir: "../../..", DryRun: true, Log: &bytes.Buffer{}})
	g.Expect(err).NotTo(HaveOccurred())
	_, err = newBedFederation(b).OperatorConfig("alpha")
	g.Expect(err).To(MatchError(ContainSubstring("knows no operator ServiceAccount")))
}

func TestOpenBed_TheRunPolykubeTestbedDownRemoves(t *testing.T) {
	g := NewWithT(t)
	// `polykube-testbed down --provider kind --run scenarios` removes <state>/<run>-<provider>;
	// the suite's kind run is there, its kwok run at <state>/<run>.
	g.Expect(testbed.RunDir("/state", RunName, "kind", provider.AddonsInCluster)).To(Equal("/state/scenarios-kind"))
	g.Expect(testbed.RunDir("/state", RunName, "kwok", provider.AddonsOnHost)).To(Equal("/state/scenarios"))
}

// The suite opens its beds through testbed.OpenBed, which knows a bed only when its package is
// linked in (testbed/host for kwok, testbed/incluster for kind and k0s): the harness itself
// (not only this test, which imports the in-cluster bed for its dry runs) must depend on both,
// or `make e2e` fails with "not supported".
func TestHarness_LinksEveryBed(t *testing.T) {
	g := NewWithT(t)
	out, err := exec.Command("go", "list", "-deps", ".").Output()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(strings.Fields(string(out))).To(ContainElements("github.com/polykube/polykube/testbed/host", "github.com/polykube/polykube/testbed/incluster"))
	for _, p := range []string{topology.ProviderKwok, topology.ProviderKind, topology.ProviderK0s} {
		b, err := testbed.OpenBed(testbed.BedOptions{Provider: p, Run: "probe", StateRoot: t.TempDir(), Log: &bytes.Buffer{}})
		g.Expect(err).NotTo(HaveOccurred(), "provider %s", p)
		g.Expect(b.Exists()).To(BeFalse(), "provider %s: nothing was brought up", p)
	}
}

// The runner plans from what each provider's bed registered, before anything is up.
func TestProviderCapabilities_FromTheRegisteredBeds(t *testing.T) {
	g := NewWithT(t)
	g.Expect(ProviderCapabilities("kind")).To(ContainElement(CapabilityDatapath))
	g.Expect(ProviderCapabilities("k0s")).To(ContainElement(CapabilityDatapath))
	g.Expect(ProviderCapabilities("kwok")).NotTo(ContainElement(CapabilityDatapath))
	g.Expect(ProviderCapabilities("kwok")).To(ContainElement("fake-nodes"))
	g.Expect(ProviderCapabilities("existing")).To(BeEmpty())
	g.Expect(ProviderCapabilities("minikube")).To(BeEmpty())
}
