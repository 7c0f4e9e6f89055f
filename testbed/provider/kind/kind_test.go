package kind

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	kindv1alpha4 "sigs.k8s.io/kind/pkg/apis/config/v1alpha4"
	kindcluster "sigs.k8s.io/kind/pkg/cluster"

	"github.com/polykube/polykube/internal/golden"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

func kindTopology() *topology.Topology {
	top := topology.Default()
	top.Provider = topology.ProviderKind
	return top
}

func TestConfig_Golden(t *testing.T) {
	g := NewWithT(t)
	var all bytes.Buffer
	for _, c := range kindTopology().Clusters {
		cfg, err := Config(c, Options{})
		g.Expect(err).NotTo(HaveOccurred())
		data, err := MarshalConfig(cfg)
		g.Expect(err).NotTo(HaveOccurred())
		all.WriteString("# " + c.Name + "\n---\n")
		all.Write(data)
	}
	golden.Assert(t, "kind-configs.golden", all.Bytes())
}

func TestConfig_FollowsTheTopologyAndCilium(t *testing.T) {
	g := NewWithT(t)
	top := kindTopology()
	seen := map[string]bool{}
	for _, c := range top.Clusters {
		cfg, err := Config(c, Options{Workers: 2})
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(cfg.Name).To(Equal(c.Name))
		g.Expect(cfg.Networking.DisableDefaultCNI).To(BeTrue(), "Cilium is the CNI")
		g.Expect(cfg.Networking.KubeProxyMode).To(Equal(KubeProxyNone), "Cilium replaces kube-proxy")
		g.Expect(cfg.Networking.PodSubnet).To(Equal(c.PodCIDRs[0]))
		g.Expect(cfg.Networking.ServiceSubnet).To(Equal(c.ServiceCIDR))
		g.Expect(seen).NotTo(HaveKey(cfg.Networking.PodSubnet))
		g.Expect(seen).NotTo(HaveKey(cfg.Networking.ServiceSubnet))
		seen[cfg.Networking.PodSubnet], seen[cfg.Networking.ServiceSubnet] = true, true
		g.Expect(cfg.Nodes).To(HaveLen(3))
		for _, n := range cfg.Nodes {
			g.Expect(n.Image).To(Equal(NodeImage))
			g.Expect(n.Image).To(MatchRegexp(`^kindest/node:v[0-9.]+@sha256:[0-9a-f]{64}$`), "pinned by digest")
		}
	}
	cfg, err := Config(top.Clusters[0], Options{KubeProxy: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.Networking.KubeProxyMode).To(Equal(kindv1alpha4.IPTablesProxyMode))
}

func TestConfig_RejectsWhatKindCannotMesh(t *testing.T) {
	g := NewWithT(t)
	c := kindTopology().Clusters[0]

	v6 := c
	v6.PodCIDRs = []string{"fd00:10:244::/56"}
	_, err := Config(v6, Options{})
	g.Expect(err).To(MatchError(ContainSubstring("exactly one IPv4 pod CIDR")))

	noSvc := c
	noSvc.ServiceCIDR = ""
	_, err = Config(noSvc, Options{})
	g.Expect(err).To(MatchError(ContainSubstring("serviceCIDR is required")))
}

// stubDocker puts a fake docker on $PATH that answers `info` and `ps` like an empty Docker
// host holding every image, and fails every other command, logging all of them. Kind validates a configuration
// after asking Docker for info and existing nodes and before provisioning, so a run that
// reaches a provisioning command proves kind's own validation accepted the configuration.
func stubDocker(t *testing.T) (logPath string) {
	t.Helper()
	dir := t.TempDir()
	logPath = filepath.Join(dir, "docker.log")
	script := `#!/bin/sh
echo "$*" >> "` + logPath + `"
case "$1" in
info) echo '{"CgroupDriver":"systemd","CgroupVersion":"2","MemoryLimit":true,"PidsLimit":true,"CPUShares":true,"SecurityOptions":["name=seccomp,profile=builtin","name=cgroupns"]}' ;;
ps) ;;
inspect) ;;
*) echo "stub docker: refusing $1" >&2; exit 1 ;;
esac
`
	if err := os.WriteFile(filepath.Join(dir, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	return logPath
}

func TestConfig_AcceptedByKindsOwnValidation(t *testing.T) {
	for _, c := range kindTopology().Clusters {
		t.Run(c.Name, func(t *testing.T) {
			g := NewWithT(t)
			log := stubDocker(t)
			cfg, err := Config(c, Options{Workers: 1})
			g.Expect(err).NotTo(HaveOccurred())
			kp := kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(logger{discard{}}))
			err = kp.Create(c.Name, kindcluster.CreateWithV1Alpha4Config(cfg), kindcluster.CreateWithKubeconfigPath(filepath.Join(t.TempDir(), "kc")))
			g.Expect(err).To(HaveOccurred(), "the stub docker refuses to provision")
			calls, rerr := os.ReadFile(log)
			g.Expect(rerr).NotTo(HaveOccurred())
			g.Expect(string(calls)).To(MatchRegexp(`(?m)^network `),
				"kind went past validation to provisioning; docker calls:\n%s\nerror: %v", calls, err)
		})
	}
}

func TestConfig_KindsValidationCanFail(t *testing.T) {
	g := NewWithT(t)
	log := stubDocker(t)
	cfg, err := Config(kindTopology().Clusters[0], Options{})
	g.Expect(err).NotTo(HaveOccurred())
	cfg.Networking.PodSubnet = "10.242.0.0/99"
	cfg.Networking.KubeProxyMode = "userspace"
	kp := kindcluster.NewProvider(kindcluster.ProviderWithDocker(), kindcluster.ProviderWithLogger(logger{discard{}}))
	err = kp.Create(cfg.Name, kindcluster.CreateWithV1Alpha4Config(cfg))
	g.Expect(err).To(MatchError(And(ContainSubstring("invalid pod subnet"), ContainSubstring("invalid kubeProxyMode"))))
	calls, _ := os.ReadFile(log)
	for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
		g.Expect(line).To(Or(HavePrefix("info"), HavePrefix("ps"), HavePrefix("inspect")), "no provisioning after a failed validation")
	}
}

func TestProvider_DryRunPrintsTheConfigAndDockerCommands(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	dry := &execx.DryRun{Out: &out}
	top := kindTopology()
	p := New(provider.Options{Dir: "/run/polykube", Topology: top}, Options{Runner: dry, Workers: 1})
	ctx := context.Background()

	c, err := p.Create(ctx, top.Clusters[0])
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(*c).To(Equal(provider.Cluster{Name: "aws-eu-central-1", Kubeconfig: "/run/polykube/aws-eu-central-1/kubeconfig", Context: "kind-aws-eu-central-1"}))
	g.Expect(p.Stop(ctx, "aws-eu-central-1")).To(Succeed())
	g.Expect(p.Start(ctx, "aws-eu-central-1")).To(Succeed())
	g.Expect(p.LoadImageArchive(ctx, "aws-eu-central-1", "/run/polykube/images.tar")).To(Succeed())
	g.Expect(p.Delete(ctx, "aws-eu-central-1")).To(Succeed())
	golden.Assert(t, "dry-run.golden", out.Bytes())
	g.Expect(dry.Commands()).To(HaveLen(2))
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// With a registry the nodes' containerd reads registry hosts from the directory TrustRegistry
// writes; without one the configuration is kind's own. The hosts.toml pulls over plain HTTP.
func TestConfig_RegistryHostsPointContainerdAtTheHostsDirectory(t *testing.T) {
	g := NewWithT(t)
	c := kindTopology().Clusters[0]
	cfg, err := Config(c, Options{})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.ContainerdConfigPatches).To(BeEmpty())
	cfg, err = Config(c, Options{RegistryHosts: true})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(cfg.ContainerdConfigPatches).To(ConsistOf(ContainSubstring(`config_path = "/etc/containerd/certs.d"`)))
	g.Expect(provider.RegistryHostsTOML("172.18.0.1:5000")).To(Equal("server = \"http://172.18.0.1:5000\"\n\n[host.\"http://172.18.0.1:5000\"]\n  capabilities = [\"pull\", \"resolve\"]\n"))
}
