package k0s

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/polykube/polykube/internal/golden"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

func k0sTopology() *topology.Topology {
	top := topology.Default()
	top.Provider = topology.ProviderK0s
	return top
}

func TestK0sctlConfig_Golden(t *testing.T) {
	g := NewWithT(t)
	top := k0sTopology()
	hosts, err := LoadHosts("testdata/hosts.yaml", top)
	g.Expect(err).NotTo(HaveOccurred())
	var all bytes.Buffer
	for _, c := range top.Clusters {
		cfg, err := K0sctlConfig(c, hosts.Clusters[c.Name], datapath.K0sVersion, false)
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Spec.K0s.Config.Spec.Network.Provider).To(Equal("custom"), "Cilium is the CNI")
		g.Expect(cfg.Spec.K0s.Config.Spec.Network.PodCIDR).To(Equal(c.PodCIDRs[0]))
		g.Expect(cfg.Spec.K0s.Config.Spec.Network.ServiceCIDR).To(Equal(c.ServiceCIDR))
		g.Expect(cfg.Spec.K0s.Config.Spec.Network.KubeProxy.Disabled).To(BeTrue())
		data, err := Marshal(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		all.WriteString("# " + c.Name + "\n---\n")
		all.Write(data)
	}
	golden.Assert(t, "k0sctl-configs.golden", all.Bytes())
}

func TestK0sConfig_Golden(t *testing.T) {
	g := NewWithT(t)
	c := k0sTopology().Clusters[1]
	cfg, err := K0sConfig(c, ConfigOptions{SANs: []string{"127.0.0.1", "localhost", ContainerName(c.Name)}})
	g.Expect(err).NotTo(HaveOccurred())
	data, err := Marshal(cfg)
	g.Expect(err).NotTo(HaveOccurred())
	golden.Assert(t, "k0s-config.golden", data)

	withProxy, err := K0sConfig(c, ConfigOptions{KubeProxy: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(withProxy.Spec.Network.KubeProxy.Disabled).To(BeFalse())
	g.Expect(withProxy.Spec.API).To(BeNil())
	g.Expect(withProxy.Spec.Images).To(BeNil(), "k0s's own images unless told")
	g.Expect(withProxy.Spec.WorkerProfiles).To(BeEmpty())
}

// With local images k0s runs the pod images the node carries, named by repository and tag;
// on a cgroup v1 host kubelet is told to accept it.
func TestK0sConfig_LocalImagesAndCgroupV1(t *testing.T) {
	g := NewWithT(t)
	c := k0sTopology().Clusters[0]
	cfg, err := K0sConfig(c, ConfigOptions{CgroupV1: true, PodImages: &PodImages{
		KubeProxy: "registry.k8s.io/kube-proxy:v1.36.3", CoreDNS: "registry.k8s.io/coredns/coredns:v1.14.2", Pause: "localhost:5000/pause:3.10"}})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*cfg.Spec.Images.KubeProxy).To(Equal(ImageSpec{Image: "registry.k8s.io/kube-proxy", Version: "v1.36.3"}))
	g.Expect(*cfg.Spec.Images.CoreDNS).To(Equal(ImageSpec{Image: "registry.k8s.io/coredns/coredns", Version: "v1.14.2"}))
	g.Expect(*cfg.Spec.Images.Pause).To(Equal(ImageSpec{Image: "localhost:5000/pause", Version: "3.10"}))
	g.Expect(cfg.Spec.WorkerProfiles).To(BeEmpty(), "the node profile is the Docker backend's, asked for by NodeProfile")
	g.Expect(ControllerCommand(true)).To(HaveSuffix(" --profile "+NodeProfile+" --ignore-pre-flight-checks"),
		"k0s's pre-flight check rejects cgroup v1")
	g.Expect(ControllerCommand(false)).To(HaveSuffix(" --profile " + NodeProfile))
	g.Expect(ControllerCommand(false)).NotTo(ContainSubstring("--ignore-pre-flight-checks"))

	_, err = K0sConfig(c, ConfigOptions{PodImages: &PodImages{KubeProxy: "localhost:5000/kube-proxy", CoreDNS: "a:1", Pause: "b:2"}})
	g.Expect(err).To(MatchError(ContainSubstring(`image "localhost:5000/kube-proxy" has no tag`)))
}

// A node in a container evicts nothing for disk (the host's disk is every node's: with
// kubelet's default a mostly used host tainted every node disk-pressure), and on a cgroup v1 host
// its kubelet accepts cgroup v1; a node on an SSH host keeps kubelet's own thresholds.
func TestK0sConfig_NodeProfile(t *testing.T) {
	g := NewWithT(t)
	c := k0sTopology().Clusters[0]
	evictNothing := map[string]any{"nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"}
	for _, v1 := range []bool{false, true} {
		cfg, err := K0sConfig(c, ConfigOptions{NodeProfile: true, CgroupV1: v1})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Spec.WorkerProfiles).To(HaveLen(1))
		p := cfg.Spec.WorkerProfiles[0]
		g.Expect(p.Name).To(Equal(NodeProfile))
		g.Expect(p.Values).To(HaveKeyWithValue("evictionHard", evictNothing))
		if v1 {
			g.Expect(p.Values).To(HaveKeyWithValue("failCgroupV1", false))
		} else {
			g.Expect(p.Values).NotTo(HaveKey("failCgroupV1"))
		}
	}
	onHost, err := K0sConfig(c, ConfigOptions{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(onHost.Spec.WorkerProfiles).To(BeEmpty())
}

// k0s itself accepts every configuration the provider writes (`k0s config validate`): the
// default one, with kube-proxy, and with local images on a cgroup v1 host. It needs a k0s
// binary of the pinned version, as the k0s node image does: POLYKUBE_K0S_BIN (built from source
// with `POLYKUBE_K0S_SRC=<checkout> scripts/images/k0s-node.sh --k0s-only`).
func TestK0sConfig_K0sValidates(t *testing.T) {
	bin := os.Getenv("POLYKUBE_K0S_BIN")
	if bin == "" {
		t.Skip("POLYKUBE_K0S_BIN is not set: set it to a k0s " + datapath.K0sVersion + " binary to have k0s validate the configurations")
	}
	g := NewWithT(t)
	out, err := exec.Command(bin, "version").Output()
	g.Expect(err).NotTo(HaveOccurred(), "%s version", bin)
	g.Expect(string(bytes.TrimSpace(out))).To(Equal(datapath.K0sVersion), "POLYKUBE_K0S_BIN is not the pinned k0s")
	c := k0sTopology().Clusters[0]
	for name, o := range map[string]ConfigOptions{
		"default":    {SANs: []string{"127.0.0.1", "localhost", ContainerName(c.Name)}},
		"kube-proxy": {KubeProxy: true},
		"local images, cgroup v1": {NodeProfile: true, CgroupV1: true, PodImages: &PodImages{KubeProxy: datapath.LocalKubeProxyImage,
			CoreDNS: datapath.LocalCoreDNSImage, Pause: datapath.LocalPauseImage}},
	} {
		cfg, err := K0sConfig(c, o)
		g.Expect(err).NotTo(HaveOccurred(), name)
		data, err := Marshal(cfg)
		g.Expect(err).NotTo(HaveOccurred(), name)
		cmd := exec.Command(bin, "config", "validate", "--config", "-")
		cmd.Stdin = bytes.NewReader(data)
		out, err := cmd.CombinedOutput()
		g.Expect(err).NotTo(HaveOccurred(), "k0s rejects the %s configuration:\n%s\n%s", name, out, data)
	}
}

func TestK0sConfig_RejectsWhatTheMeshCannotUse(t *testing.T) {
	g := NewWithT(t)
	c := k0sTopology().Clusters[0]
	v6 := c
	v6.PodCIDRs = []string{"fd00::/56"}
	_, err := K0sConfig(v6, ConfigOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("IPv4-only")))
	noSvc := c
	noSvc.ServiceCIDR = ""
	_, err = K0sConfig(noSvc, ConfigOptions{})
	g.Expect(err).To(MatchError(ContainSubstring("serviceCIDR is required")))
}

func TestLoadHosts_SaysWhatIsWrong(t *testing.T) {
	g := NewWithT(t)
	path := filepath.Join(t.TempDir(), "hosts.yaml")
	g.Expect(os.WriteFile(path, []byte(`clusters:
  aws-eu-central-1:
    - {address: 10.0.0.1, role: controller}
    - {address: 10.0.0.2, role: controller}
  gcp-europe-west3:
    - {role: boss}
  nowhere:
    - {address: 10.9.9.9}
`), 0o644)).To(Succeed())
	_, err := LoadHosts(path, k0sTopology())
	g.Expect(err).To(MatchError(And(
		ContainSubstring("clusters.aws-eu-central-1: 2 controllers; the test bed supports exactly one per cluster"),
		ContainSubstring("clusters.gcp-europe-west3[0].address: required"),
		ContainSubstring(`clusters.gcp-europe-west3[0].role: "boss" is not controller, worker or controller+worker`),
		ContainSubstring("clusters.onprem-fra: no hosts"),
		ContainSubstring("clusters.nowhere: not a cluster of topology polykube"),
	)))

	g.Expect(os.WriteFile(path, []byte("clusterz: {}\n"), 0o644)).To(Succeed())
	_, err = LoadHosts(path, k0sTopology())
	g.Expect(err).To(MatchError(ContainSubstring(`unknown field "clusterz"`)))
}

func TestProvider_DryRun(t *testing.T) {
	for _, mode := range []string{ModeDocker, ModeSSH} {
		t.Run(mode, func(t *testing.T) {
			g := NewWithT(t)
			top := k0sTopology()
			var hosts *HostsFile
			if mode == ModeSSH {
				var err error
				hosts, err = LoadHosts("testdata/hosts.yaml", top)
				g.Expect(err).NotTo(HaveOccurred())
			}
			var out bytes.Buffer
			dry := &execx.DryRun{Out: &out, Answers: map[string]string{
				"docker port k0s-aws-eu-central-1 6443/tcp": "127.0.0.1:40123\n",
			}}
			p, err := New(provider.Options{Dir: "/run/polykube", Topology: top}, Options{Mode: mode, Hosts: hosts, Runner: dry})
			g.Expect(err).NotTo(HaveOccurred())
			ctx := context.Background()
			for _, name := range []string{"aws-eu-central-1"} {
				c, err := p.Create(ctx, *top.Cluster(name))
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(c.Context).To(Equal("k0s-aws-eu-central-1"))
				g.Expect(p.LoadImageArchive(ctx, name, "/run/polykube/images.tar")).To(Succeed())
				g.Expect(p.Stop(ctx, name)).To(Succeed())
				g.Expect(p.Start(ctx, name)).To(Succeed())
				g.Expect(p.Delete(ctx, name)).To(Succeed())
			}
			golden.Assert(t, "dry-run-"+mode+".golden", out.Bytes())
		})
	}
}

// What a first real run of k0s in Docker needs, whatever the golden files say: a private
// cgroup namespace (never the host's cgroup root shared by every cluster) and the root mount
// made shared before k0s starts.
func TestDockerRunArgs_PrivateCgroupsAndSharedMounts(t *testing.T) {
	g := NewWithT(t)
	args := DockerRunArgs("a", "/run/a/k0s.yaml", Image("v1.36.3+k0s.2"), 0, false)
	g.Expect(args).To(ContainElement("--cgroupns=private"))
	g.Expect(args).NotTo(ContainElement("--cgroupns=host"))
	g.Expect(args).NotTo(ContainElement(HavePrefix("/sys/fs/cgroup:")))
	cmd := args[len(args)-1]
	g.Expect(args[len(args)-3 : len(args)-1]).To(Equal([]string{"sh", "-c"}))
	g.Expect(cmd).To(MatchRegexp(`^mount --make-rshared / && exec k0s controller `))
	g.Expect(cmd).To(ContainSubstring("--disable-components autopilot,konnectivity-server,metrics-server,update-prober"),
		"no image of those is in the local node image, and the test bed needs none of them")
	g.Expect(args).To(ContainElement("K0S_ENTRYPOINT_ROLE=controller+worker"), "the entry point cannot tell the role from a shell command")
}

// Images are imported only where a kubelet runs: not on a controller-only host.
func TestLoadImageArchive_OnlyOnKubeletHosts(t *testing.T) {
	g := NewWithT(t)
	top := k0sTopology()
	hosts, err := LoadHosts("testdata/hosts.yaml", top)
	g.Expect(err).NotTo(HaveOccurred())
	var out bytes.Buffer
	dry := &execx.DryRun{Out: &out}
	p, err := New(provider.Options{Dir: "/run/polykube", Topology: top}, Options{Mode: ModeSSH, Hosts: hosts, Runner: dry})
	g.Expect(err).NotTo(HaveOccurred())
	// aws-eu-central-1 has a controller (10.0.1.10) and a worker (10.0.1.11).
	g.Expect(p.LoadImageArchive(context.Background(), "aws-eu-central-1", "/i.tar")).To(Succeed())
	g.Expect(out.String()).NotTo(ContainSubstring("10.0.1.10"))
	g.Expect(out.String()).To(ContainSubstring("ubuntu@10.0.1.11 sudo k0s ctr --namespace k8s.io images import"))
	// onprem-fra's single host is controller+worker.
	out.Reset()
	g.Expect(p.LoadImageArchive(context.Background(), "onprem-fra", "/i.tar")).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("192.168.10.5 sudo k0s ctr"))
}

func TestNew_ChecksTheMode(t *testing.T) {
	g := NewWithT(t)
	_, err := New(provider.Options{Topology: k0sTopology()}, Options{Mode: ModeSSH})
	g.Expect(err).To(MatchError(ContainSubstring("ssh mode needs a hosts file")))
	_, err = New(provider.Options{Topology: k0sTopology()}, Options{Mode: "vagrant"})
	g.Expect(err).To(MatchError(ContainSubstring(`unknown mode "vagrant"`)))
}

func TestSaveKubeconfig_RenamesTheContextAndPointsAtThePublishedPort(t *testing.T) {
	g := NewWithT(t)
	dir := t.TempDir()
	p, err := New(provider.Options{Dir: dir, Topology: k0sTopology()}, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	raw := []byte(`apiVersion: v1
kind: Config
clusters:
- name: local
  cluster: {server: "https://172.19.0.2:6443", certificate-authority-data: Q0E=}
contexts:
- name: Default
  context: {cluster: local, user: user}
current-context: Default
users:
- name: user
  user: {client-certificate-data: Q0VSVA==, client-key-data: S0VZ}
`)
	g.Expect(p.saveKubeconfig("onprem-fra", raw, "https://127.0.0.1:40123")).To(Succeed())
	cfg, err := clientcmd.LoadFromFile(p.KubeconfigPath("onprem-fra"))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.CurrentContext).To(Equal("k0s-onprem-fra"))
	g.Expect(cfg.Contexts).To(HaveLen(1))
	g.Expect(cfg.Clusters["k0s-onprem-fra"].Server).To(Equal("https://127.0.0.1:40123"))
	g.Expect(string(cfg.Clusters["k0s-onprem-fra"].CertificateAuthorityData)).To(Equal("CA"))
	g.Expect(string(cfg.AuthInfos["k0s-onprem-fra"].ClientKeyData)).To(Equal("KEY"))

	g.Expect(p.saveKubeconfig("onprem-fra", []byte("apiVersion: v1\nkind: Config\n"), "")).To(MatchError(ContainSubstring("no current context")))
}

// racyDocker answers `docker network create` as Docker does: it checks the name, then creates,
// not atomically, so concurrent creates of one name make several networks of that name (and
// `docker run --network NAME` then fails: "network NAME is ambiguous"). Every other command
// fails, which ends Create after the network step.
type racyDocker struct {
	mu       sync.Mutex
	networks int
}

func (d *racyDocker) Run(_ context.Context, c execx.Cmd) ([]byte, error) {
	if c.Path == "docker" && len(c.Args) == 3 && c.Args[0] == "network" && c.Args[1] == "create" {
		d.mu.Lock()
		exists := d.networks > 0
		d.mu.Unlock()
		if exists {
			return []byte("Error response from daemon: network with name " + c.Args[2] + " already exists"), errors.New("exit status 1")
		}
		time.Sleep(20 * time.Millisecond)
		d.mu.Lock()
		d.networks++
		d.mu.Unlock()
		return []byte("0123456789ab\n"), nil
	}
	return nil, errors.New("not in this test")
}
func (d *racyDocker) DryRun() bool             { return false }
func (d *racyDocker) Note(string, ...any) bool { return true }

// The clusters are created at once (the in-cluster bed starts them together): the Docker network
// they share is created once, not once per cluster (first run on Docker, 2026-12-07: three networks
// named polykube-k0s, every docker run "ambiguous").
func TestProvider_CreatesTheNetworkOnce(t *testing.T) {
	g := NewWithT(t)
	top := k0sTopology()
	d := &racyDocker{}
	p, err := New(provider.Options{Dir: t.TempDir(), Topology: top}, Options{Mode: ModeDocker, Runner: d})
	g.Expect(err).NotTo(HaveOccurred())
	var wg sync.WaitGroup
	for _, c := range top.Clusters {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, _ = p.Create(context.Background(), c)
		}()
	}
	wg.Wait()
	g.Expect(d.networks).To(Equal(1), "networks named %s", Network)
}

// publishingDocker answers what Create asks of Docker and records the `docker run`.
// Once the container runs it cancels the creation: the test needs nothing after.
type publishingDocker struct {
	run    []string
	cancel context.CancelFunc
}

func (d *publishingDocker) Run(_ context.Context, c execx.Cmd) ([]byte, error) {
	switch {
	case c.Path == "docker" && c.Args[0] == "network", c.Path == "docker" && c.Args[0] == "ps":
		return nil, nil
	case c.Path == "docker" && c.Args[0] == "run":
		d.run = c.Args
		d.cancel()
		return []byte("0123456789ab\n"), nil
	}
	return nil, errors.New("not in this test")
}
func (d *publishingDocker) DryRun() bool             { return false }
func (d *publishingDocker) Note(string, ...any) bool { return true }

// The API server is published on a host port chosen at creation, which Docker keeps across
// `docker stop` and `docker start`: one Docker picks itself moves on every start, and the
// scenario suite's clients, holding the old address, lost a cluster after its first stop
// (2026-12-07, make e2e PROVIDER=k0s: every scenario after "start apiserver alpha" failed with
// "connection refused" on alpha's old port).
func TestProvider_PublishesTheAPIServerOnAPortFixedAtCreation(t *testing.T) {
	g := NewWithT(t)
	top := k0sTopology()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	d := &publishingDocker{cancel: cancel}
	p, err := New(provider.Options{Dir: t.TempDir(), Topology: top}, Options{Mode: ModeDocker, Runner: d})
	g.Expect(err).NotTo(HaveOccurred())
	_, _ = p.Create(ctx, top.Clusters[0])
	g.Expect(d.run).NotTo(BeEmpty(), "docker run was not called")
	i := slices.Index(d.run, "--publish")
	g.Expect(i).To(BeNumerically(">=", 0))
	g.Expect(d.run[i+1]).To(MatchRegexp(`^127\.0\.0\.1:[1-9][0-9]*:6443$`))
	// Outside the ephemeral range, where nothing else takes it while the node is stopped.
	var port int
	_, err = fmt.Sscanf(d.run[i+1], "127.0.0.1:%d:6443", &port)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(port).To(BeNumerically("<", 32768), "a port of the ephemeral range is taken by outgoing connections while the node is stopped")
}

// nodeRunner runs nothing: it records each command line, keeps what `docker cp` would copy,
// and answers from answers.
type nodeRunner struct {
	cmds    []string
	copied  map[string]string
	answers map[string]string
}

func (r *nodeRunner) Run(_ context.Context, c execx.Cmd) ([]byte, error) {
	line := c.String()
	r.cmds = append(r.cmds, line)
	if len(c.Args) == 3 && c.Args[0] == "cp" {
		data, err := os.ReadFile(c.Args[1])
		if err != nil {
			return nil, err
		}
		r.copied[c.Args[2]] = string(data)
	}
	return []byte(r.answers[line]), nil
}
func (*nodeRunner) DryRun() bool             { return false }
func (*nodeRunner) Note(string, ...any) bool { return true }

// A k0s node in Docker trusts the run's registry through containerd's default hosts
// directory, and reports what its containerd pulled.
func TestProvider_TrustRegistryAndNodeImages(t *testing.T) {
	g := NewWithT(t)
	r := &nodeRunner{copied: map[string]string{}, answers: map[string]string{
		"docker exec k0s-onprem-fra k0s ctr --namespace k8s.io images list --quiet": "172.18.0.1:5000/polykube/polykube@sha256:0b9a\nregistry.k8s.io/pause:3.10\n",
	}}
	p, err := New(provider.Options{Dir: t.TempDir(), Topology: k0sTopology()}, Options{Mode: ModeDocker, Runner: r})
	g.Expect(err).NotTo(HaveOccurred())
	ctx := context.Background()
	g.Expect(p.TrustRegistry(ctx, "onprem-fra", "172.18.0.1:5000", "172.18.0.1:5000")).To(Succeed())
	g.Expect(p.TrustRegistry(ctx, "onprem-fra", "registry.onprem.example", "172.18.0.1:5000")).To(Succeed())
	g.Expect(r.copied).To(HaveKeyWithValue("k0s-onprem-fra:/etc/containerd/certs.d/registry.onprem.example/hosts.toml", provider.RegistryHostsTOML("172.18.0.1:5000")))
	g.Expect(r.cmds).To(ContainElement("docker exec k0s-onprem-fra mkdir -p /etc/containerd/certs.d/172.18.0.1:5000"))
	g.Expect(r.copied).To(HaveKeyWithValue("k0s-onprem-fra:/etc/containerd/certs.d/172.18.0.1:5000/hosts.toml",
		provider.RegistryHostsTOML("172.18.0.1:5000")))
	imgs, err := p.NodeImages(ctx, "onprem-fra", "172.18.0.1:5000/")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(imgs).To(Equal(map[string][]string{"k0s-onprem-fra": {"172.18.0.1:5000/polykube/polykube@sha256:0b9a"}}))

	hosts, err := LoadHosts("testdata/hosts.yaml", k0sTopology())
	g.Expect(err).NotTo(HaveOccurred())
	ssh, err := New(provider.Options{Dir: t.TempDir(), Topology: k0sTopology()}, Options{Mode: ModeSSH, Hosts: hosts, Runner: r})
	g.Expect(err).NotTo(HaveOccurred())
	err = ssh.TrustRegistry(ctx, "onprem-fra", "172.18.0.1:5000", "172.18.0.1:5000")
	g.Expect(err).To(MatchError(provider.ErrNotSupported))
	g.Expect(err).To(MatchError(ContainSubstring("remove the registry add-on")))
}
