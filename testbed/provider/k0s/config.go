package k0s

import (
	"fmt"
	"net/netip"
	"os"
	"strings"

	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/testbed/topology"
)

// ClusterConfig is the part of k0s's ClusterConfig (k0s.k0sproject.io/v1beta1) the test bed
// sets.
type ClusterConfig struct {
	APIVersion string            `json:"apiVersion"`
	Kind       string            `json:"kind"`
	Metadata   Metadata          `json:"metadata"`
	Spec       ClusterConfigSpec `json:"spec"`
}

// Metadata names a config.
type Metadata struct {
	Name string `json:"name"`
}

// ClusterConfigSpec is k0s's spec: the API server's extra names, the network, the images of
// the pods k0s runs, kubelet settings by worker profile and telemetry.
type ClusterConfigSpec struct {
	API            *APISpec        `json:"api,omitempty"`
	Network        NetworkSpec     `json:"network"`
	Images         *ImagesSpec     `json:"images,omitempty"`
	WorkerProfiles []WorkerProfile `json:"workerProfiles,omitempty"`
	Telemetry      *TelemetrySpec  `json:"telemetry,omitempty"`
}

// ImagesSpec names the images of the pods k0s runs itself (k0s's defaults are its own
// quay.io/k0sproject images).
type ImagesSpec struct {
	KubeProxy *ImageSpec `json:"kubeproxy,omitempty"`
	CoreDNS   *ImageSpec `json:"coredns,omitempty"`
	Pause     *ImageSpec `json:"pause,omitempty"`
}

// ImageSpec is an image as k0s names it: repository and tag apart.
type ImageSpec struct {
	Image   string `json:"image"`
	Version string `json:"version"`
}

// WorkerProfile is a named set of kubelet configuration values a worker starts with
// (`k0s worker --profile NAME`).
type WorkerProfile struct {
	Name   string         `json:"name"`
	Values map[string]any `json:"values"`
}

// TelemetrySpec turns k0s's telemetry off: the test bed's clusters report nothing.
type TelemetrySpec struct {
	Enabled bool `json:"enabled"`
}

// NodeProfile is the worker profile of a k0s node in a container (the Docker backend). Its
// kubelet evicts nothing for disk: the nodes of every cluster share the host's disk, as kind's
// nodes do, so its free space says nothing about one node, and with the threshold kubelet's
// default (10% free) a host whose file system is mostly used elsewhere taints every node
// disk-pressure and nothing schedules (seen here, 2026-12-07: Cilium's operator Pending on
// three k0s nodes). kind's kubeadm configuration turns the same eviction off. On a cgroup v1
// host it also lets kubelet run (KEP-5573: from 1.35 kubelet fails on cgroup v1 unless
// failCgroupV1 is false), as kind's does.
const NodeProfile = "polykube-node"

// nodeProfileValues are NodeProfile's kubelet settings.
func nodeProfileValues(cgroupV1 bool) map[string]any {
	v := map[string]any{
		"evictionHard": map[string]any{"nodefs.available": "0%", "nodefs.inodesFree": "0%", "imagefs.available": "0%"},
	}
	if cgroupV1 {
		v["failCgroupV1"] = false
	}
	return v
}

// ConfigOptions are the settings of a cluster's k0s configuration besides its topology.
type ConfigOptions struct {
	// KubeProxy keeps kube-proxy; by default Cilium replaces it.
	KubeProxy bool
	// SANs are extra names of the API server's certificate.
	SANs []string
	// PodImages name the images of the pods k0s runs (kube-proxy, CoreDNS, pause) by full
	// reference; nil keeps k0s's own.
	PodImages *PodImages
	// NodeProfile adds NodeProfile, for a node in a container; CgroupV1 adds its cgroup v1
	// setting.
	NodeProfile, CgroupV1 bool
}

// PodImages are full references of the images of the pods k0s runs.
type PodImages struct {
	KubeProxy, CoreDNS, Pause string
}

// APISpec adds names to the API server's certificate.
type APISpec struct {
	SANs []string `json:"sans,omitempty"`
}

// NetworkSpec is k0s's network section.
type NetworkSpec struct {
	// Provider "custom" makes k0s install no CNI: Cilium is installed afterwards.
	Provider    string          `json:"provider"`
	PodCIDR     string          `json:"podCIDR"`
	ServiceCIDR string          `json:"serviceCIDR"`
	KubeProxy   KubeProxyConfig `json:"kubeProxy"`
}

// KubeProxyConfig turns kube-proxy off when Cilium replaces it.
type KubeProxyConfig struct {
	Disabled bool `json:"disabled"`
}

// K0sctlCluster is a k0sctl configuration (k0sctl.k0sproject.io/v1beta1, kind Cluster).
type K0sctlCluster struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Metadata   Metadata   `json:"metadata"`
	Spec       K0sctlSpec `json:"spec"`
}

// K0sctlSpec lists the hosts and the k0s to install on them.
type K0sctlSpec struct {
	Hosts []K0sctlHost `json:"hosts"`
	K0s   K0sctlK0s    `json:"k0s"`
}

// K0sctlHost is one host k0sctl installs k0s on over SSH.
type K0sctlHost struct {
	Role     string    `json:"role"`
	NoTaints bool      `json:"noTaints,omitempty"`
	SSH      SSHConfig `json:"ssh"`
}

// SSHConfig is how k0sctl reaches a host.
type SSHConfig struct {
	Address string `json:"address"`
	User    string `json:"user"`
	Port    int    `json:"port"`
	KeyPath string `json:"keyPath,omitempty"`
}

// K0sctlK0s is the k0s version and configuration k0sctl installs.
type K0sctlK0s struct {
	Version string        `json:"version"`
	Config  ClusterConfig `json:"config"`
}

// Host roles of k0sctl.
const (
	RoleController       = "controller"
	RoleWorker           = "worker"
	RoleControllerWorker = "controller+worker"
)

// SSHHost is a host of a cluster in the hosts file.
type SSHHost struct {
	Address string `json:"address"`
	User    string `json:"user,omitempty"`
	Port    int    `json:"port,omitempty"`
	KeyPath string `json:"keyPath,omitempty"`
	// Role is controller, worker or controller+worker (default: controller+worker for a
	// cluster's only host, else controller for the first and worker for the others).
	Role string `json:"role,omitempty"`
}

// HostsFile lists the SSH hosts of each cluster for k0sctl:
//
//	clusters:
//	  aws-eu-central-1:
//	    - {address: 10.0.1.10, user: root, keyPath: ~/.ssh/id_ed25519}
type HostsFile struct {
	Clusters map[string][]SSHHost `json:"clusters"`
}

// LoadHosts reads and checks a hosts file against the topology.
func LoadHosts(path string, top *topology.Topology) (*HostsFile, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read k0s hosts file: %w", err)
	}
	var h HostsFile
	if err := yaml.UnmarshalStrict(data, &h); err != nil {
		return nil, fmt.Errorf("k0s hosts file %s: %w", path, err)
	}
	var problems []string
	for _, c := range top.Clusters {
		hosts := h.Clusters[c.Name]
		if len(hosts) == 0 {
			problems = append(problems, fmt.Sprintf("clusters.%s: no hosts; every cluster of the topology needs at least one", c.Name))
		}
		controllers := 0
		for i, host := range hosts {
			if host.Address == "" {
				problems = append(problems, fmt.Sprintf("clusters.%s[%d].address: required", c.Name, i))
			}
			switch hostRole(hosts, i) {
			case RoleController, RoleControllerWorker:
				controllers++
			case RoleWorker:
			default:
				problems = append(problems, fmt.Sprintf("clusters.%s[%d].role: %q is not controller, worker or controller+worker", c.Name, i, host.Role))
			}
		}
		if len(hosts) > 0 && controllers != 1 {
			problems = append(problems, fmt.Sprintf("clusters.%s: %d controllers; the test bed supports exactly one per cluster", c.Name, controllers))
		}
	}
	for name := range h.Clusters {
		if top.Cluster(name) == nil {
			problems = append(problems, fmt.Sprintf("clusters.%s: not a cluster of topology %s", name, top.Name))
		}
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("k0s hosts file %s:\n  %s", path, strings.Join(problems, "\n  "))
	}
	return &h, nil
}

func hostRole(hosts []SSHHost, i int) string {
	switch {
	case hosts[i].Role != "":
		return hosts[i].Role
	case len(hosts) == 1:
		return RoleControllerWorker
	case i == 0:
		return RoleController
	default:
		return RoleWorker
	}
}

// K0sConfig renders the k0s ClusterConfig of a topology cluster: no CNI (Cilium is the
// CNI), the topology's pod and service CIDRs, kube-proxy off unless kept, no telemetry.
func K0sConfig(c topology.Cluster, o ConfigOptions) (*ClusterConfig, error) {
	if len(c.PodCIDRs) != 1 {
		return nil, fmt.Errorf("cluster %s: the k0s provider needs exactly one IPv4 pod CIDR (got %s)", c.Name, strings.Join(c.PodCIDRs, ", "))
	}
	if p, err := netip.ParsePrefix(c.PodCIDRs[0]); err != nil || !p.Addr().Is4() {
		return nil, fmt.Errorf("cluster %s: pod CIDR %q is not an IPv4 CIDR: k0s clusters of the test bed are IPv4-only; give it an IPv4 pod CIDR", c.Name, c.PodCIDRs[0])
	}
	if c.ServiceCIDR == "" {
		return nil, fmt.Errorf("cluster %s: serviceCIDR is required with the k0s provider: every cluster of a mesh needs its own", c.Name)
	}
	cfg := &ClusterConfig{
		APIVersion: "k0s.k0sproject.io/v1beta1",
		Kind:       "ClusterConfig",
		Metadata:   Metadata{Name: c.Name},
		Spec: ClusterConfigSpec{Network: NetworkSpec{
			Provider:    "custom",
			PodCIDR:     c.PodCIDRs[0],
			ServiceCIDR: c.ServiceCIDR,
			KubeProxy:   KubeProxyConfig{Disabled: !o.KubeProxy},
		}, Telemetry: &TelemetrySpec{Enabled: false},
		},
	}
	if len(o.SANs) > 0 {
		cfg.Spec.API = &APISpec{SANs: o.SANs}
	}
	if pi := o.PodImages; pi != nil {
		var imgs ImagesSpec
		var err error
		for _, x := range []struct {
			ref string
			to  **ImageSpec
		}{{pi.KubeProxy, &imgs.KubeProxy}, {pi.CoreDNS, &imgs.CoreDNS}, {pi.Pause, &imgs.Pause}} {
			if *x.to, err = splitImage(x.ref); err != nil {
				return nil, fmt.Errorf("cluster %s: %w", c.Name, err)
			}
		}
		cfg.Spec.Images = &imgs
	}
	if o.NodeProfile {
		cfg.Spec.WorkerProfiles = []WorkerProfile{{Name: NodeProfile, Values: nodeProfileValues(o.CgroupV1)}}
	}
	return cfg, nil
}

// splitImage splits an image reference with a tag into k0s's image and version.
func splitImage(ref string) (*ImageSpec, error) {
	i := strings.LastIndex(ref, ":")
	if i < 0 || strings.Contains(ref[i:], "/") {
		return nil, fmt.Errorf("image %q has no tag; k0s names an image by repository and tag", ref)
	}
	return &ImageSpec{Image: ref[:i], Version: ref[i+1:]}, nil
}

// K0sctlConfig renders the k0sctl configuration of a cluster on SSH hosts.
func K0sctlConfig(c topology.Cluster, hosts []SSHHost, k0sVersion string, kubeProxy bool) (*K0sctlCluster, error) {
	if len(hosts) == 0 {
		return nil, fmt.Errorf("cluster %s has no hosts in the k0s hosts file", c.Name)
	}
	k0s, err := K0sConfig(c, ConfigOptions{KubeProxy: kubeProxy})
	if err != nil {
		return nil, err
	}
	out := &K0sctlCluster{
		APIVersion: "k0sctl.k0sproject.io/v1beta1",
		Kind:       "Cluster",
		Metadata:   Metadata{Name: c.Name},
		Spec:       K0sctlSpec{K0s: K0sctlK0s{Version: k0sVersion, Config: *k0s}},
	}
	for i, h := range hosts {
		role := hostRole(hosts, i)
		ssh := SSHConfig{Address: h.Address, User: h.User, Port: h.Port, KeyPath: h.KeyPath}
		if ssh.User == "" {
			ssh.User = "root"
		}
		if ssh.Port == 0 {
			ssh.Port = 22
		}
		out.Spec.Hosts = append(out.Spec.Hosts, K0sctlHost{Role: role, NoTaints: role == RoleControllerWorker, SSH: ssh})
	}
	return out, nil
}

// Controller returns the controller host of a cluster's hosts.
func Controller(hosts []SSHHost) SSHHost {
	for i, h := range hosts {
		if r := hostRole(hosts, i); r == RoleController || r == RoleControllerWorker {
			return h
		}
	}
	return SSHHost{}
}

// Marshal writes a configuration as YAML.
func Marshal(v any) ([]byte, error) { return yaml.Marshal(v) }

func clientcmdNew() *clientcmdapi.Config { return clientcmdapi.NewConfig() }
