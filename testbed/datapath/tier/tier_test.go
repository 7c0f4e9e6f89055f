package tier

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/golden"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/topology"
)

func dryRun(t *testing.T, opts Options) (*Bed, *execx.DryRun, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	dry := &execx.DryRun{Out: &out, Answers: DryRunAnswers}
	if opts.Topology == nil {
		opts.Topology = topology.Default()
	}
	opts.Dir, opts.SourceDir, opts.DryRun, opts.Out, opts.Runner = "/run/polykube", "testdata/src", true, &out, dry
	b, err := Open(opts)
	if err != nil {
		t.Fatal(err)
	}
	return b, dry, &out
}

func TestUp_DryRunPlan(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts Options
	}{
		{"kind", Options{Provider: topology.ProviderKind}},
		{"k0s-docker", Options{Provider: topology.ProviderK0s}},
		{"k0s-ssh", Options{Provider: topology.ProviderK0s, K0sHosts: "../../provider/k0s/testdata/hosts.yaml", GitListen: "10.0.0.1:8090"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, _, out := dryRun(t, tc.opts)
			if err := b.Up(context.Background()); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			golden.Assert(t, "up-"+tc.name+".golden", out.Bytes())
		})
	}
}

func TestDemo_DryRunPlan(t *testing.T) {
	b, _, out := dryRun(t, Options{Provider: topology.ProviderKind})
	if err := b.Demo(context.Background(), out, false); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	golden.Assert(t, "demo-kind.golden", out.Bytes())
}

// The plan satisfies what ClusterMesh needs, whatever the golden files say.
func TestUp_MeshPlanInvariants(t *testing.T) {
	g := NewWithT(t)
	b, dry, out := dryRun(t, Options{Provider: topology.ProviderKind})
	g.Expect(b.Up(context.Background())).To(Succeed())
	top := b.Topology()

	var installs, connects []string
	nodePorts, ids := map[string]bool{}, map[string]bool{}
	for _, c := range dry.Commands() {
		if c.Path != "cilium" {
			continue
		}
		line := strings.Join(c.Args, " ")
		g.Expect(c.Env).To(ConsistOf(ContainSubstring("KUBECONFIG=/run/polykube/clusters/aws-eu-central-1/kubeconfig:")))
		switch {
		case c.Args[0] == "install":
			installs = append(installs, argAfter(c.Args, "--context"))
			for _, kv := range setValues(c.Args) {
				k, v, _ := strings.Cut(kv, "=")
				switch k {
				case "clustermesh.apiserver.service.nodePort":
					g.Expect(nodePorts).NotTo(HaveKey(v), "distinct NodePorts (cilium#24692)")
					nodePorts[v] = true
				case "cluster.id":
					g.Expect(ids).NotTo(HaveKey(v), "unique cluster IDs")
					ids[v] = true
				}
			}
		case strings.HasPrefix(line, "clustermesh connect"):
			connects = append(connects, argAfter(c.Args, "--context")+"->"+argAfter(c.Args, "--destination-context"))
		}
	}
	g.Expect(installs).To(Equal([]string{"kind-aws-eu-central-1", "kind-gcp-europe-west3", "kind-onprem-fra"}))
	g.Expect(nodePorts).To(HaveLen(len(top.Clusters)))
	g.Expect(connects).To(ConsistOf(
		"kind-aws-eu-central-1->kind-gcp-europe-west3", "kind-aws-eu-central-1->kind-onprem-fra", "kind-gcp-europe-west3->kind-onprem-fra"),
		"every pair is connected once (connections are bidirectional)")

	// The CA is copied to a cluster before Cilium is installed there.
	plan := out.String()
	for _, c := range top.Clusters[1:] {
		copyAt := strings.Index(plan, "copy Secret kube-system/cilium-ca from kind-aws-eu-central-1 to kind-"+c.Name)
		installAt := strings.Index(plan, "cilium install --context kind-"+c.Name)
		g.Expect(copyAt).To(BeNumerically(">", 0))
		g.Expect(copyAt).To(BeNumerically("<", installAt), "CA copied to %s before its install", c.Name)
	}
	// The Git server listens on the kind network's gateway, never on loopback.
	g.Expect(plan).To(ContainSubstring("serve-git --root /run/polykube/git --listen 172.18.0.1:<port>"))
	g.Expect(plan).NotTo(ContainSubstring("127.0.0.1:<port>/polykube"))
	// Flux runs only the two controllers.
	g.Expect(plan).To(ContainSubstring("flux install --context kind-onprem-fra --components=source-controller,kustomize-controller"))
	g.Expect(slices.ContainsFunc(dry.Commands(), func(c execx.Cmd) bool {
		return c.Path == "docker" && c.Args[0] == "build" && slices.Contains(c.Args, datapath.Image)
	})).To(BeTrue())
}

func TestOpen_RefusesAProviderWithoutDatapath(t *testing.T) {
	g := NewWithT(t)
	_, err := Open(Options{Topology: topology.Default(), Provider: topology.ProviderKwok, Dir: t.TempDir(), DryRun: true, Out: &bytes.Buffer{}})
	g.Expect(err).To(MatchError(ContainSubstring(`provider "kwok" has no datapath; use kind or k0s`)))
	_, err = Open(Options{Provider: topology.ProviderKind, Dir: t.TempDir(), Out: &bytes.Buffer{}})
	g.Expect(err).To(MatchError(ContainSubstring("no datapath run in")))
}

func argAfter(args []string, flag string) string {
	if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return fmt.Sprintf("<no %s>", flag)
}

func setValues(args []string) []string {
	var out []string
	for i, a := range args {
		if a == "--set" && i+1 < len(args) {
			out = append(out, args[i+1])
		}
	}
	return out
}

func TestDemoChecks(t *testing.T) {
	g := NewWithT(t)
	cl := []string{"a", "b", "c"}
	count := func(answers ...string) *datapath.Tally { t := datapath.Count(answers, cl); return &t }

	g.Expect(CheckBefore(count("a", "b", "c", "a"), cl)).To(Succeed())
	g.Expect(CheckBefore(count("a", "b", "c", ""), cl)).To(MatchError(ContainSubstring("1 of 4 calls through the global Service got no answer")))
	g.Expect(CheckBefore(count("a", "b", "b"), cl)).To(MatchError(ContainSubstring("no call was answered by c")))
	g.Expect(CheckBefore(nil, cl)).To(Succeed(), "a dry run has no answers")

	g.Expect(CheckAfter(count("a", "b", "", ""), cl, "c")).To(Succeed(), "calls to the stopped cluster may fail")
	g.Expect(CheckAfter(count("a", "a", ""), cl, "c")).To(MatchError(ContainSubstring("no call was answered by b, which is still up")))
	g.Expect(CheckAfter(count("a", "b", "c"), cl, "c")).To(MatchError(ContainSubstring("answered by c, whose nodes are stopped")))
}
