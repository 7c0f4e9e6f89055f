// Package tier brings up and tears down the datapath tier: real clusters (kind or k0s) with
// Cilium ClusterMesh, Flux following the test bed's Git server, and the Polykube operator
// running in every cluster from an image built from the repository. `polykube-testbed up
// --provider kind|k0s` and `demo --provider kind` run it; with --dry-run they print every
// action and every external command instead.
package tier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/pipeline"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/provider/k0s"
	"github.com/polykube/polykube/testbed/provider/kind"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Provider is what the datapath tier uses of a provider that creates the clusters (kind,
// k0s): beyond provider.Provider, each of its abilities below. A provider with fewer (existing
// clusters) is run with the steps those abilities serve left out (see ownsClusters).
type Provider interface {
	provider.Provider
	datapath.ImageLoader
	apiEndpointer
	nodeNetworker
}

// apiEndpointer names the API server as the cluster's own nodes reach it (for Cilium).
type apiEndpointer interface {
	APIServerEndpoint(cluster string) (host string, port int)
}

// nodeNetworker names the Docker network of the nodes, or "" when they are not containers.
type nodeNetworker interface {
	DockerNetwork() string
}

var (
	_ Provider = (*kind.Provider)(nil)
	_ Provider = (*k0s.Provider)(nil)
)

// Options configure a datapath run.
type Options struct {
	// Topology is what to bring up; its Provider is replaced by Provider when that is set.
	Topology *topology.Topology
	// Provider is kind or k0s.
	Provider string
	// Dir is the run's state directory.
	Dir string
	// SourceDir is the Polykube checkout (Dockerfile, gitops/, operator CRDs); "" finds it
	// above the working directory.
	SourceDir string
	// DryRun prints the plan instead of running it.
	DryRun bool
	// Out receives status lines (and the plan).
	Out io.Writer
	// K0sHosts is a k0s hosts file: k0s on SSH hosts through k0sctl instead of in Docker.
	K0sHosts string
	// GitListen is host:port for the Git server when the nodes are not Docker containers
	// (k0s on SSH hosts): an address of this host that the hosts reach.
	GitListen string
	// SelfBinary is a polykube-testbed binary that can run `serve-git`; "" builds one.
	SelfBinary string
	// Retain keeps what was created when Up fails.
	Retain bool
	// Images overrides the topology's image source (datapath.ImagesLocal or ImagesUpstream).
	Images string
	// Runner overrides the runner (tests); nil means execx.Exec or, with DryRun, execx.DryRun.
	Runner execx.Runner
}

// State is what a datapath run records in its directory.
type State struct {
	Topology *topology.Topology `json:"topology"`
	K0sHosts string             `json:"k0sHosts,omitempty"`
	GitAddr  string             `json:"gitAddr,omitempty"`
	Seeded   string             `json:"seeded,omitempty"`
	// Operator is the operator Deployment found in the rendered operator base.
	Operator gitrepo.OperatorObject `json:"operator"`
	// ServiceAccount is the operator's ServiceAccount in the rendered operator base.
	ServiceAccount gitrepo.OperatorObject `json:"serviceAccount"`
	// MeshAddresses are the addresses each cluster's clustermesh-apiserver was given to its
	// peers at, by cluster (see reconnectMesh).
	MeshAddresses map[string][]string `json:"meshAddresses,omitempty"`
	// InstalledInGiven records that the clusters, given to the bed rather than created by it,
	// had no Flux or Polykube before Up installed them: Down then takes them out (given.go).
	InstalledInGiven bool `json:"installedInGiven,omitempty"`
}

// Bed is one datapath run.
type Bed struct {
	opts  Options
	state *State
	prov  provider.Provider
	env   *datapath.Env
	procs proc.Dir
	host  host

	// overlayMTU is the WireGuard interface's MTU on an isolated topology (Cilium's MTU), set
	// once the overlay is up; 0 otherwise.
	overlayMTU int

	// opConfigs are the operator configurations OperatorConfig issued, per cluster.
	opMu      sync.Mutex
	opConfigs map[string]*rest.Config
}

// DryRunAnswers are what a dry run pretends the commands that are read from answered.
var DryRunAnswers = map[string]string{
	"docker network inspect kind ":          "172.18.0.1 fc00:f853:ccd:e793::1 ",
	"docker network inspect " + k0s.Network: "172.19.0.1 ",
	"docker port k0s-":                      "127.0.0.1:<port>\n",
	// A dry run plans for a cgroup v2 host; a real run asks Docker.
	"docker info --format {{.CgroupVersion}}": "2\n",
}

// Open prepares a run: it reads the run's recorded state if there is one, and builds the
// provider. It creates nothing.
func Open(opts Options) (*Bed, error) {
	if opts.Out == nil {
		opts.Out = os.Stderr
	}
	if opts.Runner == nil {
		if opts.DryRun {
			opts.Runner = &execx.DryRun{Out: opts.Out, Answers: DryRunAnswers}
		} else {
			opts.Runner = execx.Exec{Log: opts.Out}
		}
	}
	st := &State{Topology: opts.Topology, K0sHosts: opts.K0sHosts}
	if data, err := os.ReadFile(statePath(opts.Dir)); err == nil && !opts.DryRun {
		var rec State
		if err := json.Unmarshal(data, &rec); err != nil {
			return nil, fmt.Errorf("read %s: %w", statePath(opts.Dir), err)
		}
		if st.Topology == nil {
			st = &rec
		} else {
			st.GitAddr, st.Seeded, st.Operator, st.ServiceAccount = rec.GitAddr, rec.Seeded, rec.Operator, rec.ServiceAccount
		}
	}
	if st.Topology == nil {
		return nil, fmt.Errorf("no datapath run in %s: run `polykube-testbed up --provider kind` first", opts.Dir)
	}
	if opts.SourceDir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		if opts.SourceDir, err = gobuild.FindRoot(wd); err != nil {
			return nil, fmt.Errorf("find the Polykube checkout (the datapath tier builds its image from it): %w; set the source directory", err)
		}
	}
	top := *st.Topology
	if opts.Provider != "" {
		top.Provider = opts.Provider
	}
	if opts.Images != "" {
		top.Images = opts.Images
	}
	if top.HasAddon(topology.AddonMeshMirror) {
		return nil, fmt.Errorf("addons: %q stands in for Cilium where the add-ons run on the host (kwok); provider %s runs Cilium, whose own endpoint-slice synchronisation is what to use here: drop it from the topology", topology.AddonMeshMirror, top.Provider)
	}
	if err := top.Validate(); err != nil {
		return nil, err
	}
	st.Topology = &top
	b := &Bed{opts: opts, state: st, procs: proc.Dir(filepath.Join(opts.Dir, "procs"))}
	popts := provider.Options{Dir: filepath.Join(opts.Dir, "clusters"), Topology: st.Topology, Log: opts.Out}
	b.host = hostFacts(opts.Runner)
	reg, err := provider.Lookup(top.Provider)
	if err != nil {
		return nil, err
	}
	if pl, err := provider.PlacementOf(&top); err != nil {
		return nil, err
	} else if pl != provider.AddonsInCluster {
		return nil, fmt.Errorf("provider %q has no datapath: its add-ons run as host processes (polykube-testbed up%s); use kind or k0s", top.Provider, testbed.ProviderFlag(&top))
	}
	setup := provider.Setup{Options: popts, Runner: opts.Runner, CgroupV1: b.host.cgroupV1, KubeProxy: !b.kubeProxyReplacement(), HostsFile: st.K0sHosts, Images: top.Images}
	if li, ok := datapath.LocalNodeImageOf(top.Provider); ok && top.Images == datapath.ImagesLocal {
		setup.NodeImage = li.Refs[0]
	}
	p, err := reg.New(setup)
	if err != nil {
		return nil, err
	}
	b.prov = p
	b.env = &datapath.Env{Runner: opts.Runner, Topology: st.Topology, Out: opts.Out}
	for i, c := range st.Topology.Clusters {
		var host string
		var port int
		if ep, ok := b.prov.(apiEndpointer); ok {
			host, port = ep.APIServerEndpoint(c.Name)
		}
		b.env.Members = append(b.env.Members, datapath.Member{
			Cluster: c, Index: i, APIHost: host, APIPort: port,
			Kubeconfig: filepath.Join(popts.Dir, c.Name, "kubeconfig"),
		})
	}
	for i := range b.env.Members {
		cl, err := b.prov.Kubeconfig(context.Background(), b.env.Members[i].Name)
		if err == nil {
			b.env.Members[i].Kubeconfig, b.env.Members[i].Context = cl.Kubeconfig, cl.Context
		}
	}
	return b, nil
}

// stateFile is the state a datapath run records in its directory; it marks the directory as a
// datapath run for `down --all`.
const stateFile = "datapath.json"

func statePath(dir string) string { return filepath.Join(dir, stateFile) }

// Env is the run's datapath environment (members, runner), for the probe and the harness.
func (b *Bed) Env() *datapath.Env { return b.env }

// Provider is the run's provider.
func (b *Bed) Provider() provider.Provider { return b.prov }

// ownsClusters says whether the bed created the clusters (kind, k0s) or was given them
// (existing). In clusters it was given it installs no network (they keep their CNI, and
// their own mesh if any), loads no image into their nodes, checks first that they have no
// Flux or Polykube of their own, and takes out on Down what it put in.
func (b *Bed) ownsClusters() bool { return provider.Has(b.prov, provider.CapabilityCreate) }

// dockerNetwork is the Docker network of the nodes, or "" when they are not containers of
// this host or the provider does not say.
func (b *Bed) dockerNetwork() string {
	if n, ok := b.prov.(nodeNetworker); ok {
		return n.DockerNetwork()
	}
	return ""
}

// Topology is the run's topology.
func (b *Bed) Topology() *topology.Topology { return b.state.Topology }

// GitURL is the clone URL of the run's Git repository.
func (b *Bed) GitURL() string { return gitrepo.URL(b.state.GitAddr) }

func (b *Bed) saveState() error {
	if b.opts.DryRun {
		return nil
	}
	if err := os.MkdirAll(b.opts.Dir, 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(b.state, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(statePath(b.opts.Dir), data, 0o644)
}

// requirements are what the host needs for this run.
func (b *Bed) requirements() datapath.Requirements {
	// Cilium is installed with the Helm SDK: no cilium CLI. With upstream images Flux is
	// installed with the flux CLI (`flux install`), when the topology lists it; with local
	// images from the test bed's own manifests.
	req := datapath.Requirements{}
	if slices.Contains(b.state.Topology.Addons, topology.AddonFlux) && b.state.Topology.Images != datapath.ImagesLocal {
		req.Tools = append(req.Tools, datapath.FluxCLI)
	}
	// Docker builds the image either way; it also runs the nodes unless k0s is on SSH hosts.
	req.Docker = true
	switch {
	case b.dockerNetwork() != "":
		req.Clusters = len(b.state.Topology.Clusters)
	case b.ownsClusters():
		req.Tools = append(req.Tools, datapath.K0sctlCLI) // k0s on SSH hosts
	}
	return req
}

// Up brings the run up. On failure (or Ctrl-C) it deletes what it created unless Retain.
func (b *Bed) Up(ctx context.Context) (err error) {
	e := b.env
	top := b.state.Topology
	var with []string
	switch {
	case !b.ownsClusters():
		// Their own network: nothing of Cilium's is installed.
	case len(top.Clusters) > 1:
		with = append(with, "Cilium ClusterMesh")
	default:
		with = append(with, "Cilium")
	}
	if slices.Contains(top.Addons, topology.AddonFlux) {
		with = append(with, "Flux")
	}
	if slices.Contains(top.Addons, topology.AddonOperator) {
		with = append(with, "the Polykube operator")
	}
	list := strings.Join(with, ", ")
	if n := len(with); n > 1 {
		list = strings.Join(with[:n-1], ", ") + " and " + with[n-1]
	}
	if list == "" {
		list = "nothing but their own"
	}
	fmt.Fprintf(b.opts.Out, "Bringing up %q: %d %s clusters with %s\n", top.Name, len(top.Clusters), top.Provider, list)
	if _, ok := b.prov.(datapath.ImageLoader); !ok {
		fmt.Fprintf(b.opts.Out, "Provider %s cannot load images into its nodes: the clusters must have or pull %s themselves\n", top.Provider, strings.Join(b.imageRefs(), ", "))
	}
	defer func() {
		if err == nil || b.opts.DryRun {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		// The diagnostics first: once the clusters are deleted there is nothing to read, and CI
		// artifacts would be empty.
		diag := filepath.Join(b.diagnosticsRoot(), "up-failed-"+time.Now().Format("20060102-150405"))
		if derr := b.Diagnose(dctx, diag); derr != nil {
			fmt.Fprintf(b.opts.Out, "Diagnostics of the failure (partly: %v) in %s\n", derr, diag)
		} else {
			fmt.Fprintf(b.opts.Out, "Diagnostics of the failure in %s\n", diag)
		}
		if b.opts.Retain {
			fmt.Fprintf(b.opts.Out, "Keeping what was created for debugging (--retain); remove it with `polykube-testbed down --provider %s`.\n", top.Provider)
			return
		}
		fmt.Fprintln(b.opts.Out, "Up failed; deleting what it created (use --retain to keep it).")
		if derr := b.Down(dctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("clean up after the failure: %w", derr))
		}
	}()
	if err := e.Steps().Run(b.actions(ctx)); err != nil {
		return err
	}
	return b.saveState()
}

// actions are the steps of Up, in order, as kind's create pipeline is a list of actions: the
// clusters, the images in their nodes, the CNI and its checks, then the add-ons the topology
// lists (git, flux, operator).
func (b *Bed) actions(ctx context.Context) []pipeline.Action {
	e := b.env
	top := b.state.Topology
	has := func(a string) bool { return slices.Contains(top.Addons, a) }
	local := top.Images == datapath.ImagesLocal
	// Clusters the bed was given keep their own network and get their images themselves.
	owned := b.ownsClusters()
	_, canLoad := b.prov.(datapath.ImageLoader)
	images := "upstream images"
	if local {
		images = "images built here"
	}
	createWhat := fmt.Sprintf("Creating %d %s clusters (%s)", len(top.Clusters), top.Provider, images)
	if !owned {
		createWhat = fmt.Sprintf("Checking that the %d %s clusters answer (%s)", len(top.Clusters), top.Provider, images)
	}
	return []pipeline.Action{
		{What: "Checking the host", Run: func() error { return b.preflight(ctx) }},
		{What: createWhat, Run: func() error { return b.createClusters(ctx) }},
		{What: "Checking that the clusters have no Flux or Polykube of their own", Run: func() error { return b.checkNothingInstalled(ctx) }, Skip: owned},
		{What: "Building the Polykube image " + datapath.Image, Run: func() error { return b.buildImage(ctx) }},
		{What: "Loading images into every node", Run: func() error { return b.loadImages(ctx) }, Skip: !canLoad},
		{What: "Starting the WireGuard overlay on every node (network: isolated)", Run: func() error { return b.startOverlay(ctx) }, Skip: !top.Isolated()},
		{What: "Installing Cilium " + datapath.CiliumVersion + " with Helm", Run: func() error {
			opts, err := b.ciliumOptions(ctx)
			if err != nil {
				return err
			}
			return datapath.InstallCilium(ctx, e, opts)
		}, Skip: !owned},
		{What: "Waiting for Cilium, the nodes and CoreDNS", Run: func() error { return datapath.WaitCilium(ctx, e) }, Skip: !owned},
		{What: "Checking pod-to-Service traffic in every cluster", Run: func() error { return datapath.CheckServices(ctx, e) }},
		{What: "Waiting for Cilium ClusterMesh", Run: func() error { return datapath.MeshStatus(ctx, e) }, Skip: !owned || len(e.Members) < 2},
		{What: "Starting the Git server", Run: func() error { return b.upGit(ctx) }, Skip: !has(topology.AddonGit)},
		{What: "Checking that a pod reaches the Git server", Run: func() error { return datapath.CheckGitReachable(ctx, e, b.GitURL()) },
			Skip: !has(topology.AddonGit) || !has(topology.AddonFlux)},
		{What: "Installing Flux", Run: func() error { return b.upFlux(ctx) }, Skip: !has(topology.AddonFlux)},
		{What: "Waiting for the operators", Run: func() error { return b.waitOperators(ctx) }, Skip: !has(topology.AddonOperator)},
		{What: "Checking that nothing was pulled", Run: func() error { return b.checkNothingPulled(ctx) }, Skip: !local},
		{What: "Recording the run", Run: b.saveState},
	}
}

// diagnosticsRoot is where a failed run leaves its diagnostics: $ARTIFACTS (CI) when set, else
// beside the run's directory (which Down removes).
func (b *Bed) diagnosticsRoot() string {
	if a := os.Getenv("ARTIFACTS"); a != "" {
		return filepath.Join(a, "datapath")
	}
	return filepath.Dir(b.opts.Dir)
}

func (b *Bed) imageArchive() string { return filepath.Join(b.opts.Dir, "polykube-image.tar") }

// buildImage builds the Polykube image: from the Dockerfile with upstream images (it pulls a Go
// base image), from binaries compiled here with local ones.
func (b *Bed) buildImage(ctx context.Context) error {
	if b.state.Topology.Images == datapath.ImagesLocal {
		return datapath.BuildPolykubeImage(ctx, b.env.Runner, b.opts.SourceDir)
	}
	return datapath.BuildImage(ctx, b.env, b.opts.SourceDir)
}

// loadImages loads the Polykube image (and, with local images, Cilium's) into every node, as
// `kind load docker-image` does: one archive, imported into each node's containerd.
func (b *Bed) loadImages(ctx context.Context) error {
	l, ok := b.prov.(datapath.ImageLoader)
	if !ok {
		return fmt.Errorf("provider %s cannot load images into its nodes (%w): the clusters must have or pull %s themselves", b.prov.Name(), provider.ErrNotSupported, strings.Join(b.imageRefs(), ", "))
	}
	refs := b.imageRefs()
	archive := b.imageArchive()
	if _, err := b.env.Runner.Run(ctx, execx.Command("docker", append([]string{"save", "--output", archive}, refs...)...)); err != nil {
		return fmt.Errorf("save %s: %w", strings.Join(refs, ", "), err)
	}
	defer os.Remove(archive)
	return datapath.LoadImage(ctx, b.env, l, archive)
}

// imageRefs are the images the nodes need that the bed provides: the Polykube image and, with
// local images, Cilium's (in clusters the bed created) and Flux's.
func (b *Bed) imageRefs() []string {
	refs := []string{datapath.Image}
	if b.state.Topology.Images == datapath.ImagesLocal {
		if b.ownsClusters() {
			refs = append(refs, datapath.LocalCiliumImages().List()...)
		}
		if slices.Contains(b.state.Topology.Addons, topology.AddonFlux) {
			refs = append(refs, datapath.LocalFluxImages().List()...)
		}
	}
	return refs
}

// ciliumOptions are each member's Cilium options: the images, kube-proxy replacement where the
// host allows it, the capabilities the host cannot grant, one CA for the mesh and every other
// member as a peer.
func (b *Bed) ciliumOptions(ctx context.Context) (func(datapath.Member) datapath.CiliumOptions, error) {
	var ca *datapath.CA
	peers := map[string]datapath.MeshPeer{}
	if len(b.env.Members) > 1 {
		if b.env.Runner.DryRun() {
			ca = &datapath.CA{CertPEM: []byte("<CA>"), KeyPEM: []byte("<key>")}
		} else {
			var err error
			if ca, err = datapath.LoadOrCreateCA(filepath.Join(b.opts.Dir, "clustermesh-ca"), "polykube-testbed "+b.state.Topology.Name+" ClusterMesh CA"); err != nil {
				return nil, fmt.Errorf("the ClusterMesh CA: %w", err)
			}
		}
		for _, m := range b.env.Members {
			ips := []string{"<" + m.Name + " node address>"}
			if a, ok := b.prov.(nodeAddresser); ok {
				got, err := a.NodeAddresses(ctx, m.Name)
				if err != nil {
					return nil, err
				}
				ips = got
				if b.state.MeshAddresses == nil {
					b.state.MeshAddresses = map[string][]string{}
				}
				b.state.MeshAddresses[m.Name] = got
			}
			// A peer is listed under the name its Cilium goes by (meshName), which its
			// clustermesh-apiserver publishes its state under.
			peers[m.Name] = datapath.MeshPeer{Name: m.CiliumName(), IPs: ips, Port: datapath.ClusterMeshNodePort(m)}
		}
	}
	images := datapath.CiliumImages{}
	if b.state.Topology.Images == datapath.ImagesLocal {
		images = datapath.LocalCiliumImages()
	}
	return func(m datapath.Member) datapath.CiliumOptions {
		o := datapath.CiliumOptions{Images: images, KubeProxyReplacement: b.kubeProxyReplacement(),
			MissingCapabilities: b.host.missingCaps, CA: ca, MTU: b.overlayMTU}
		for _, p := range b.env.Members {
			if p.Name != m.Name {
				o.Peers = append(o.Peers, peers[p.Name])
			}
		}
		return o
	}, nil
}

// nodeAddresser is implemented by providers whose nodes other clusters reach on a shared
// network (kind): the addresses of a cluster's clustermesh-apiserver NodePort.
type nodeAddresser interface {
	NodeAddresses(ctx context.Context, cluster string) ([]string, error)
}

// kubeProxyReplacement: Cilium replaces kube-proxy only on a cgroup v2 host; its socket load
// balancing needs cgroup v2 and a cgroup namespace per node (Cilium's kind guide).
func (b *Bed) kubeProxyReplacement() bool { return !b.host.cgroupV1 }

// checkNothingPulled fails when any kubelet reported pulling an image: with local images every
// image must have been in the node already.
func (b *Bed) checkNothingPulled(ctx context.Context) error {
	if !b.env.Runner.Note("list the Events of every cluster and fail on any \"Pulling\" (kubelet pulls an image)") {
		return nil
	}
	pulled, err := datapath.PulledImages(ctx, b.env)
	if err != nil {
		return err
	}
	var lines []string
	for _, m := range b.env.Members {
		for _, p := range pulled[m.Name] {
			lines = append(lines, m.Name+": "+p)
		}
	}
	if len(lines) > 0 {
		return fmt.Errorf("with local images nothing may be pulled, but kubelet pulled:\n  %s", strings.Join(lines, "\n  "))
	}
	fmt.Fprintf(b.opts.Out, "   no kubelet of %d clusters reported pulling an image\n", len(b.env.Members))
	return nil
}

// host is what the datapath tier needs to know of this machine.
type host struct {
	// cgroupV1: Docker runs containers on cgroup v1 (or a hybrid hierarchy).
	cgroupV1 bool
	// missingCaps are capabilities not in this process's bounding set (so not in the nodes').
	missingCaps []string
}

func hostFacts(r execx.Runner) host {
	var h host
	if out, err := r.Run(context.Background(), execx.Command("docker", "info", "--format", "{{.CgroupVersion}}")); err == nil {
		h.cgroupV1 = strings.TrimSpace(string(out)) == "1"
	}
	if !r.DryRun() {
		h.missingCaps = datapath.MissingCapabilities()
	}
	return h
}

func (b *Bed) preflight(ctx context.Context) error {
	req := b.requirements()
	if b.opts.DryRun {
		var checks []string
		if req.Docker {
			checks = append(checks, "docker reachable")
		}
		if req.Clusters > 0 {
			checks = append(checks, fmt.Sprintf("memory for %d clusters", req.Clusters),
				fmt.Sprintf("fs.inotify.max_user_watches >= %d", datapath.MinInotifyWatches),
				fmt.Sprintf("fs.inotify.max_user_instances >= %d", datapath.MinInotifyInstances))
		}
		for _, t := range req.Tools {
			checks = append(checks, fmt.Sprintf("%s >= %s (tested with %s)", t.Name, t.Minimum, t.Pinned))
		}
		b.env.Runner.Note("check %s", strings.Join(checks, "; "))
		return nil
	}
	r := datapath.Preflight(ctx, datapath.LocalHost(execx.Exec{}), req)
	r.Print(b.opts.Out)
	if err := r.Err(); err != nil {
		return err
	}
	if b.state.Topology.Images != datapath.ImagesLocal {
		return nil
	}
	needed := []string{"cilium", "polykube"}
	if li, ok := datapath.LocalNodeImageOf(b.state.Topology.Provider); ok && b.dockerNetwork() != "" {
		needed = append([]string{li.Name}, needed...)
	}
	if slices.Contains(b.state.Topology.Addons, topology.AddonFlux) {
		needed = append(needed, "flux")
	}
	missing, err := datapath.MissingLocalImages(ctx, needed...)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("images: local, but Docker has no %s: build them with `polykube-testbed images build` (make images; minutes on a first run)",
			strings.Join(missing, ", "))
	}
	fmt.Fprintf(b.opts.Out, "   local images: %s present in Docker\n", strings.Join(needed, ", "))
	return nil
}

func (b *Bed) createClusters(ctx context.Context) error {
	if err := b.saveState(); err != nil {
		return err
	}
	var mu sync.Mutex
	errs := make([]error, len(b.env.Members))
	sem := make(chan struct{}, 3)
	if b.opts.DryRun {
		sem = make(chan struct{}, 1) // a plan reads in topology order
	}
	var wg sync.WaitGroup
	for i := range b.env.Members {
		m := &b.env.Members[i]
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			if !b.ownsClusters() && !b.env.Runner.Note("check that context %s of %s answers (%s creates nothing)", m.Context, m.Kubeconfig, b.prov.Name()) {
				return // a dry run: the provider runs no commands to print, and would read the kubeconfig
			}
			cl, err := b.prov.Create(ctx, m.Cluster)
			if err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.Name, err)
				return
			}
			mu.Lock()
			m.Kubeconfig, m.Context = cl.Kubeconfig, cl.Context
			mu.Unlock()
		}()
		if b.opts.DryRun {
			wg.Wait()
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// gitListen is where the Git server listens: a free port on the gateway of the nodes'
// Docker network, which is an address of this host that pods reach (127.0.0.1 is not: it is
// each node's own loopback), or GitListen for SSH hosts.
func (b *Bed) gitListen(ctx context.Context) (string, error) {
	if b.state.GitAddr != "" {
		return b.state.GitAddr, nil
	}
	network := b.dockerNetwork()
	if b.opts.GitListen != "" || network == "" {
		if b.opts.GitListen == "" {
			return "", fmt.Errorf("the %s clusters' nodes are not Docker containers of this host: give the Git server an address of this host that their pods reach (--git-listen host:port)", b.prov.Name())
		}
		return b.opts.GitListen, nil
	}
	out, err := b.env.Runner.Run(ctx, execx.Command("docker", "network", "inspect", network, "--format", "{{range .IPAM.Config}}{{.Gateway}} {{end}}"))
	if err != nil {
		return "", fmt.Errorf("find the gateway of Docker network %s: %w", network, err)
	}
	var gw string
	for _, f := range strings.Fields(string(out)) {
		if a, err := netip.ParseAddr(f); err == nil && a.Is4() {
			gw = f
			break
		}
	}
	if gw == "" {
		return "", fmt.Errorf("Docker network %s has no IPv4 gateway (docker network inspect said %q)", network, strings.TrimSpace(string(out)))
	}
	if b.opts.DryRun {
		return gw + ":<port>", nil
	}
	l, err := net.Listen("tcp", net.JoinHostPort(gw, "0"))
	if err != nil {
		return "", fmt.Errorf("listen on %s, the gateway of Docker network %s: %w; the datapath tier needs the Docker bridge on this host (Linux; Docker Desktop's VM hides it)", gw, network, err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr, nil
}

const gitProc = "git-server"

func (b *Bed) upGit(ctx context.Context) error {
	addr, err := b.gitListen(ctx)
	if err != nil {
		return err
	}
	b.state.GitAddr = addr
	root := filepath.Join(b.opts.Dir, "git")
	self := b.opts.SelfBinary
	if self == "" {
		self = "polykube-testbed"
		if !b.opts.DryRun {
			if self, err = gobuild.Build(ctx, b.opts.SourceDir, "./testbed/cmd/polykube-testbed", filepath.Join(b.opts.Dir, ".bin")); err != nil {
				return err
			}
		}
	}
	spec := proc.Spec{Name: gitProc, Path: self, Args: []string{"serve-git", "--root", root, "--listen", addr}, HealthURL: "http://" + addr + "/healthz"}
	if b.env.Runner.Note("start the Git server process: %s %s (health %s)", spec.Path, strings.Join(spec.Args, " "), spec.HealthURL) {
		if err := gitrepo.InitBare(root); err != nil {
			return err
		}
		if _, err := b.procs.Start(spec); err != nil {
			return err
		}
		if err := waitHTTP(ctx, b.env.Topology.Wait(topology.WaitProcess), spec.HealthURL); err != nil {
			return fmt.Errorf("%w (log: %s)", err, b.procs.LogPath(gitProc))
		}
		if err := b.saveState(); err != nil {
			return err
		}
	}
	seed, err := datapath.Seed(b.state.Topology, gitrepo.SourcesIn(b.opts.SourceDir), datapath.Image)
	if err != nil {
		return err
	}
	b.state.Operator, b.state.ServiceAccount = seed.Deployment, seed.ServiceAccount
	if !b.env.Runner.Note("commit to %s: %s", b.GitURL(), strings.Join(sortedKeys(seed.Files), ", ")) {
		return nil
	}
	rev, err := gitrepo.Commit(ctx, b.GitURL(), gitrepo.Change{Put: seed.Files, Message: "testbed: operator base, cluster entry points and roster of " + b.state.Topology.Name})
	if err != nil {
		return err
	}
	b.state.Seeded = rev
	return b.saveState()
}

func (b *Bed) upFlux(ctx context.Context) error {
	if err := b.installFlux(ctx); err != nil {
		return err
	}
	if err := datapath.ApplyFluxObjects(ctx, b.env, b.GitURL()); err != nil {
		return err
	}
	return datapath.WaitApplied(ctx, b.env, b.state.Seeded)
}

// installFlux installs the source and kustomize controllers: with upstream images by the flux
// CLI, with local ones from the test bed's manifests and the CRDs of the controllers' modules.
func (b *Bed) installFlux(ctx context.Context) error {
	if b.state.Topology.Images != datapath.ImagesLocal {
		return datapath.InstallFlux(ctx, b.env)
	}
	var crds string
	if !b.env.Runner.DryRun() {
		var err error
		if crds, err = toolchain.FluxCRDs(ctx); err != nil {
			return err
		}
	}
	return datapath.InstallFluxLocal(ctx, b.env, datapath.LocalFluxImages(), crds, func(ctx context.Context, cl client.Client, dir string) error {
		return testbed.ApplyCRDDir(ctx, cl, dir, b.state.Topology.Wait(topology.WaitCRDs))
	})
}

// waitOperators waits until the operator Deployment is available in every cluster.
func (b *Bed) waitOperators(ctx context.Context) error {
	d := b.state.Operator
	return b.WaitDeployment(ctx, d.Namespace, d.Name)
}

// WaitDeployment waits until a Deployment exists and is fully available in every member.
func (b *Bed) WaitDeployment(ctx context.Context, namespace, name string) error {
	if !b.env.Runner.Note("wait until Deployment %s/%s is available in every cluster", namespace, name) {
		return nil
	}
	for _, m := range b.env.Members {
		if err := b.waitDeployment(ctx, m, namespace, name); err != nil {
			return err
		}
	}
	return nil
}

// WaitDeploymentIn waits until a Deployment exists and is fully available in one member.
func (b *Bed) WaitDeploymentIn(ctx context.Context, cluster, namespace, name string) error {
	m, err := b.env.Member(cluster)
	if err != nil {
		return err
	}
	if !b.env.Runner.Note("wait until Deployment %s/%s is available in %s", namespace, name, m.Context) {
		return nil
	}
	return b.waitDeployment(ctx, m, namespace, name)
}

func (b *Bed) waitDeployment(ctx context.Context, m datapath.Member, namespace, name string) error {
	cl, err := b.env.Client(m)
	if err != nil {
		return err
	}
	what := fmt.Sprintf("Deployment %s/%s in %s to be available", namespace, name, m.Name)
	return wait.For(ctx, datapath.Waits[datapath.WaitRollout], what, func(ctx context.Context) error {
		var d appsv1.Deployment
		if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return err
		}
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		if d.Status.ObservedGeneration < d.Generation || d.Status.AvailableReplicas < want || d.Status.UpdatedReplicas < want {
			return fmt.Errorf("%d of %d replicas available", d.Status.AvailableReplicas, want)
		}
		return nil
	})
}

// Down deletes the clusters (or, in clusters the bed was given, takes out what it installed)
// and stops the Git server.
func (b *Bed) Down(ctx context.Context) error {
	var errs []error
	if err := b.uninstall(ctx); err != nil {
		// The Git server and the state are kept: Down can be run again once the clusters answer.
		return fmt.Errorf("take Flux and Polykube out of the %s clusters: %w", b.prov.Name(), err)
	}
	for _, m := range b.env.Members {
		if err := b.prov.Delete(ctx, m.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if b.env.Runner.Note("stop the Git server and remove %s", b.opts.Dir) {
		if err := b.procs.StopAll(ctx, b.env.Topology.Wait(topology.WaitProcess)); err != nil {
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			errs = append(errs, os.RemoveAll(b.opts.Dir))
		}
	}
	return errors.Join(errs...)
}

func waitHTTP(ctx context.Context, w topology.Wait, url string) error {
	return wait.For(ctx, w, url+" to answer", wait.HTTPOK(url))
}

func sortedKeys(m map[string][]byte) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
