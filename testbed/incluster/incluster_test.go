package incluster

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/golden"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/topology"
	"sigs.k8s.io/yaml"
)

func dryRun(t *testing.T, opts Options) (*Bed, *execx.DryRun, *bytes.Buffer) {
	t.Helper()
	var out bytes.Buffer
	dry := &execx.DryRun{Out: &out, Answers: DryRunAnswers}
	if opts.Topology == nil {
		opts.Topology = topology.Default()
	}
	opts.Dir, opts.SourceDir, opts.DryRun, opts.Log, opts.Runner = "/run/polykube", "testdata/src", true, &out, dry
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
		{"kind-local", Options{Provider: topology.ProviderKind, Images: datapath.ImagesLocal}},
		{"k0s-docker", Options{Provider: topology.ProviderK0s}},
		{"k0s-ssh", Options{Provider: topology.ProviderK0s, K0sHosts: "../provider/k0s/testdata/hosts.yaml", GitListen: "10.0.0.1:8090"}},
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

// TestUp_DryRunPlan_GivenClusters plans existing clusters with the add-ons in them: no
// cluster created or deleted, no Cilium, no image loaded; a check that they have no Flux or
// Polykube first, and Down takes out only what Up put in.
func TestUp_DryRunPlan_GivenClusters(t *testing.T) {
	top := topology.Default()
	top.Provider, top.AddonPlacement = topology.ProviderExisting, topology.PlacementCluster
	for i := range top.Clusters {
		top.Clusters[i].Kubeconfig, top.Clusters[i].Context = "/home/me/.kube/config", "prod-"+top.Clusters[i].Name
	}
	b, _, out := dryRun(t, Options{Topology: top, Images: datapath.ImagesLocal, GitListen: "10.0.0.1:8090"})
	if err := b.Up(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	fmt.Fprintln(out, "--- down")
	if err := b.Down(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	golden.Assert(t, "up-existing-in-cluster.golden", out.Bytes())
	for _, never := range []string{"kind create", "docker exec", "helm", "Cilium " + datapath.CiliumVersion, "ctr"} {
		if bytes.Contains(out.Bytes(), []byte(never)) {
			t.Errorf("the plan for given clusters has %q:\n%s", never, out)
		}
	}
	// Without an address for the Git server the plan stops there, saying what to give.
	b, _, out = dryRun(t, Options{Topology: top, Images: datapath.ImagesLocal})
	err := b.Up(context.Background())
	if err == nil || !strings.Contains(err.Error(), "give the Git server an address of this host that their pods reach (--git-listen host:port)") {
		t.Fatalf("Up without --git-listen: %v\n%s", err, out)
	}
}

func TestDemo_DryRunPlan(t *testing.T) {
	b, _, out := dryRun(t, Options{Provider: topology.ProviderKind})
	if err := testbed.Demo(context.Background(), b, out, testbed.DemoOptions{}); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	golden.Assert(t, "demo-kind.golden", out.Bytes())
}

// The plan satisfies what ClusterMesh needs, whatever the golden files say: every cluster is
// installed once, in topology order, with a unique cluster ID, its own clustermesh-apiserver
// NodePort, every other cluster as a peer at that peer's NodePort, and the same CA.
func TestUp_MeshPlanInvariants(t *testing.T) {
	g := NewWithT(t)
	b, dry, out := dryRun(t, Options{Provider: topology.ProviderKind})
	g.Expect(b.Up(context.Background())).To(Succeed())
	top := b.Topology()
	plan := out.String()

	installs := helmInstalls(t, plan)
	var order []string
	nodePorts, ids := map[string]int{}, map[int]string{}
	for _, in := range installs {
		order = append(order, in.context)
		g.Expect(ids).NotTo(HaveKey(in.values.Cluster.ID), "unique cluster IDs")
		ids[in.values.Cluster.ID] = in.values.Cluster.Name
		nodePorts[in.values.Cluster.Name] = in.values.ClusterMesh.APIServer.Service.NodePort
		g.Expect(in.values.ClusterMesh.APIServer.Service.Type).To(Equal("NodePort"))
		g.Expect(in.values.TLS.CA.Cert).To(Equal("<the run's CA certificate>"), "one CA for the mesh, redacted in the plan")
	}
	var want []string
	for _, c := range top.Clusters {
		want = append(want, "kind-"+c.Name)
	}
	g.Expect(order).To(Equal(want))
	distinct := map[int]bool{}
	for _, p := range nodePorts {
		distinct[p] = true
	}
	g.Expect(distinct).To(HaveLen(len(top.Clusters)), "distinct NodePorts (cilium#24692)")
	for _, in := range installs {
		peers := map[string]int{}
		for _, p := range in.values.ClusterMesh.Config.Clusters {
			g.Expect(p.IPs).To(HaveLen(1))
			peers[p.Name] = p.Port
		}
		others := map[string]int{}
		for name, port := range nodePorts {
			if name != in.values.Cluster.Name {
				others[name] = port
			}
		}
		g.Expect(peers).To(Equal(others), "%s lists every other cluster at its NodePort", in.context)
	}

	// The Git server listens on the kind network's gateway, never on loopback.
	g.Expect(plan).To(ContainSubstring("serve-git --root /run/polykube/git --listen 172.18.0.1:<port>"))
	g.Expect(plan).NotTo(ContainSubstring("127.0.0.1:<port>/polykube"))
	// Flux runs only the two controllers.
	g.Expect(plan).To(ContainSubstring("flux install --context kind-onprem-fra --components=source-controller,kustomize-controller"))
	g.Expect(slices.ContainsFunc(dry.Commands(), func(c execx.Cmd) bool {
		return c.Path == "docker" && c.Args[0] == "build" && slices.Contains(c.Args, datapath.Image)
	})).To(BeTrue())
	// One archive is saved, by the load step.
	saves := 0
	for _, c := range dry.Commands() {
		if c.Path == "docker" && c.Args[0] == "save" {
			saves++
		}
	}
	g.Expect(saves).To(Equal(1))
}

type helmInstall struct {
	context string
	values  struct {
		Cluster struct {
			Name string `json:"name"`
			ID   int    `json:"id"`
		} `json:"cluster"`
		ClusterMesh struct {
			APIServer struct {
				Service struct {
					Type     string `json:"type"`
					NodePort int    `json:"nodePort"`
				} `json:"service"`
			} `json:"apiserver"`
			Config struct {
				Clusters []struct {
					Name string   `json:"name"`
					Port int      `json:"port"`
					IPs  []string `json:"ips"`
				} `json:"clusters"`
			} `json:"config"`
		} `json:"clustermesh"`
		TLS struct {
			CA struct {
				Cert string `json:"cert"`
			} `json:"ca"`
		} `json:"tls"`
	}
}

// helmInstalls reads the Helm installs a dry-run plan notes: a line naming the context, then
// the values as comment lines.
func helmInstalls(t *testing.T, plan string) []helmInstall {
	t.Helper()
	var out []helmInstall
	lines := strings.Split(plan, "\n")
	for i := 0; i < len(lines); i++ {
		head, ok := strings.CutPrefix(lines[i], "  # helm upgrade --install cilium ")
		if !ok {
			continue
		}
		_, rest, _ := strings.Cut(head, ") in ")
		ctx, _, _ := strings.Cut(rest, ",")
		var vals []string
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "  #   ") {
			i++
			vals = append(vals, strings.TrimPrefix(lines[i], "  #   "))
		}
		in := helmInstall{context: ctx}
		if err := yaml.Unmarshal([]byte(strings.Join(vals, "\n")), &in.values); err != nil {
			t.Fatalf("values of %s: %v", ctx, err)
		}
		out = append(out, in)
	}
	return out
}

func TestOpen_RefusesAProviderWithoutDatapath(t *testing.T) {
	g := NewWithT(t)
	_, err := Open(Options{Topology: topology.Default(), Provider: topology.ProviderKwok, Dir: t.TempDir(), DryRun: true, Log: &bytes.Buffer{}})
	g.Expect(err).To(MatchError(ContainSubstring(`provider "kwok" has no datapath: its add-ons run as host processes (polykube-testbed up); use k0s or kind`)))
	// A provider that is not registered is named, with those that are.
	_, err = Open(Options{Topology: topology.Default(), Provider: "minikube", Dir: t.TempDir(), DryRun: true, Log: &bytes.Buffer{}})
	g.Expect(err).To(MatchError(ContainSubstring(`unknown provider "minikube"`)))
	g.Expect(err).To(MatchError(ContainSubstring("use one of existing, k0s, kind, kwok")))
	_, err = Open(Options{Provider: topology.ProviderKind, Dir: t.TempDir(), Log: &bytes.Buffer{}})
	g.Expect(err).To(MatchError(ContainSubstring("no run of the in-cluster bed in")))
	// The mesh mirror stands in for Cilium on the host bed; here Cilium runs.
	top := topology.Default()
	top.Addons = append(top.Addons, topology.AddonMeshMirror)
	_, err = Open(Options{Topology: top, Provider: topology.ProviderKind, Dir: t.TempDir(), DryRun: true, Log: &bytes.Buffer{}})
	g.Expect(err).To(MatchError(ContainSubstring(`"mesh-mirror" stands in for Cilium where the add-ons run on the host (kwok); provider kind runs Cilium`)))
}

func TestCheckTally(t *testing.T) {
	g := NewWithT(t)
	count := func(answers ...string) datapath.Tally { return datapath.Count(answers, []string{"a", "b", "c"}) }

	g.Expect(CheckTally(count("a", "b", "a"), []string{"a", "b"}, []string{"c"})).To(Succeed())
	g.Expect(CheckTally(count("a", "b", ""), []string{"a", "b"}, nil)).To(MatchError(ContainSubstring("1 of 3 calls through the global Service got no answer")))
	g.Expect(CheckTally(count("a", "a", "a"), []string{"a", "b"}, nil)).To(MatchError(ContainSubstring("no call was answered by b")))
	g.Expect(CheckTally(count("a", "c", "a"), []string{"a"}, []string{"b", "c"})).To(MatchError(ContainSubstring("1 calls were answered by c, which should answer none")))
}

// With local images nothing can be pulled, so every image the plan runs is in the archive the
// nodes import: Polykube's, Cilium's and, with the flux add-on, Flux's.
func TestUp_LocalImagesAreAllLoaded(t *testing.T) {
	g := NewWithT(t)
	b, dry, _ := dryRun(t, Options{Provider: topology.ProviderKind, Images: datapath.ImagesLocal})
	g.Expect(b.Up(context.Background())).To(Succeed())
	var saved []string
	for _, c := range dry.Commands() {
		if c.Path == "docker" && c.Args[0] == "save" {
			saved = append(saved, c.Args[3:]...)
		}
	}
	want := append([]string{datapath.Image}, datapath.LocalCiliumImages().List()...)
	want = append(want, datapath.LocalFluxImages().List()...)
	g.Expect(saved).To(ConsistOf(want))
}

// With the registry add-on the nodes pull the Polykube image from the run's registry: it is
// started on the kind network's gateway (loopback is each node's own), every node's containerd
// is pointed at it, the image is pushed there and not loaded into the nodes, and the operator
// the seed delivers names it in the registry by digest.
func TestUp_WithTheRegistryTheNodesPullPolykube(t *testing.T) {
	g := NewWithT(t)
	top := topology.Default()
	top.Addons = append(top.Addons, topology.AddonRegistry)
	b, dry, out := dryRun(t, Options{Topology: top, Provider: topology.ProviderKind, Images: datapath.ImagesLocal})
	if err := b.Up(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	plan := out.String()
	g.Expect(plan).To(ContainSubstring("start the registry (toolchain registry) on 172.18.0.1:<port>"))
	g.Expect(plan).To(ContainSubstring("write /etc/containerd/certs.d/172.18.0.1:<port>/hosts.toml into every node of onprem-fra"))
	g.Expect(plan).To(ContainSubstring("push " + datapath.Image + " to 172.18.0.1:<port>/polykube/polykube"))
	g.Expect(plan).To(ContainSubstring("crictl images"))
	// The pods the bed runs itself (the pod-to-Service check, the Git reach check, the probes)
	// run the image from the registry too: the nodes have no other.
	g.Expect(plan).To(ContainSubstring("whose pod (image 172.18.0.1:<port>/polykube/polykube@sha256:<digest>)"))
	g.Expect(plan).NotTo(ContainSubstring("image: " + datapath.Image))
	var loaded []string
	for _, c := range dry.Commands() {
		if c.Path == "docker" && c.Args[0] == "save" && c.Args[2] != "/run/polykube/polykube-push.tar" {
			loaded = append(loaded, c.Args[3:]...)
		}
	}
	g.Expect(loaded).NotTo(ContainElement(datapath.Image), "the Polykube image reaches the nodes from the registry, not by a load")
	g.Expect(b.EchoTemplate().Spec.Containers[0].Image).To(Equal("172.18.0.1:<port>/polykube/polykube@sha256:<digest>"))
}

// Registry gives the scenarios the address every node's containerd was pointed at, so that a
// release they push there names its image where the kubelets pull it; a run without the add-on,
// or whose registry has not started, says so.
func TestRegistry_IsTheAddressTheNodesTrust(t *testing.T) {
	g := NewWithT(t)
	b, _, _ := dryRun(t, Options{Provider: topology.ProviderKind, Images: datapath.ImagesLocal})
	_, err := b.Registry()
	g.Expect(err).To(MatchError(ContainSubstring("add the registry add-on to the topology")))

	top := topology.Default()
	top.Addons = append(top.Addons, topology.AddonRegistry)
	b, _, out := dryRun(t, Options{Topology: top, Provider: topology.ProviderKind, Images: datapath.ImagesLocal})
	_, err = b.Registry()
	g.Expect(err).To(MatchError(ContainSubstring("the run's registry has not started")))

	// As recorded by the registry's first start.
	b.state.RegistryAddr = "172.18.0.1:40123"
	if err := b.Up(context.Background()); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	addr, err := b.Registry()
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(addr).To(Equal("172.18.0.1:40123"))
	g.Expect(out.String()).To(ContainSubstring("write /etc/containerd/certs.d/" + addr + "/hosts.toml into every node of onprem-fra"))
}

// On an isolated topology (issue 38) the plan starts the overlay before Cilium, gives Cilium
// the overlay interface's MTU, and lists every peer's clustermesh-apiserver at the peer's
// overlay address (host N of the overlay CIDR, N its cluster ID): the one address of another
// cluster that a node reaches. The Git server and the registry listen on the first cluster's
// network gateway, an address of this host that every cluster's nodes reach through their own.
func TestUp_DryRunPlan_IsolatedMeshesThroughTheOverlay(t *testing.T) {
	g := NewWithT(t)
	top := topology.Default()
	top.Provider, top.Network, top.Overlay = topology.ProviderKind, topology.NetworkIsolated, topology.OverlayWireGuard
	top.Addons = append(top.Addons, topology.AddonRegistry)
	for i := range top.Clusters {
		top.Clusters[i].Provider = topology.ProviderKind
	}
	top.SetDefaults()
	g.Expect(top.Validate()).To(Succeed())
	b, _, out := dryRun(t, Options{Topology: top, Images: datapath.ImagesLocal})
	g.Expect(b.Up(context.Background())).To(Succeed(), out.String())
	plan := out.String()

	overlayAt := strings.Index(plan, " • Starting the WireGuard overlay on every node")
	g.Expect(overlayAt).To(BeNumerically(">", 0), plan)
	g.Expect(overlayAt).To(BeNumerically("<", strings.Index(plan, " • Installing Cilium")), "the overlay is up before Cilium")
	g.Expect(strings.Count(plan, "  #   MTU: 1440\n")).To(Equal(len(top.Clusters)), "every Cilium takes the WireGuard interface's MTU")

	overlayAddr := map[string]string{}
	for _, c := range top.Clusters {
		overlayAddr[c.Name] = fmt.Sprintf("100.96.0.%d", c.ClusterID)
	}
	installs := helmInstalls(t, plan)
	g.Expect(installs).To(HaveLen(len(top.Clusters)))
	for _, in := range installs {
		g.Expect(in.values.ClusterMesh.Config.Clusters).To(HaveLen(len(top.Clusters) - 1))
		for _, p := range in.values.ClusterMesh.Config.Clusters {
			g.Expect(p.IPs).To(Equal([]string{overlayAddr[p.Name]}), "%s reaches %s's clustermesh-apiserver at its overlay address", in.context, p.Name)
		}
	}
	first := top.Clusters[0].Name
	g.Expect(plan).To(ContainSubstring("serve-git --root /run/polykube/git --listen <gateway of " + first + "-net>:<port>"))
	g.Expect(plan).To(ContainSubstring("start the registry (toolchain registry) on <gateway of " + first + "-net>:<port>"))
}
