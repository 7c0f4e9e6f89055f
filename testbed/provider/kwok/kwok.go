// Package kwok is the provider of the hermetic tier's clusters: each cluster is a kwokctl cluster
// with the binary runtime, every component from the pinned toolchain (nothing is downloaded), its
// own work directory, kubeconfig and ports, and fake nodes whose pod CIDRs follow the topology.
package kwok

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/polykube/polykube/testbed/internal/shell"
	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Name is the provider's name in a topology.
const Name = topology.ProviderKwok

// FakeNodeAnnotation marks the nodes kwok-controller manages.
const FakeNodeAnnotation = "kwok.x-k8s.io/node"

// Binaries are the paths of the programs a kwok cluster runs.
type Binaries struct {
	Kwokctl, KwokController, KubeAPIServer, KubeControllerManager, KubeScheduler, Etcd string
}

// Validate says which binary is missing.
func (b Binaries) Validate() error {
	var missing []string
	for name, p := range map[string]string{"kwokctl": b.Kwokctl, "kwok": b.KwokController, "kube-apiserver": b.KubeAPIServer,
		"kube-controller-manager": b.KubeControllerManager, "kube-scheduler": b.KubeScheduler, "etcd": b.Etcd} {
		if p == "" {
			missing = append(missing, name)
		} else if _, err := os.Stat(p); err != nil {
			missing = append(missing, name+" ("+p+")")
		}
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return fmt.Errorf("kwok provider: missing %s; run `make tools` to build them", strings.Join(missing, ", "))
	}
	return nil
}

// Provider creates kwok clusters.
type Provider struct {
	opts provider.Options
	bins Binaries
	log  io.Writer
}

var _ provider.Provider = (*Provider)(nil)

// New returns a kwok provider keeping its state under opts.Dir.
func New(opts provider.Options, bins Binaries) (*Provider, error) {
	if err := bins.Validate(); err != nil {
		return nil, err
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	return &Provider{opts: opts, bins: bins, log: opts.Log}, nil
}

// Name implements provider.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements provider.Provider: kwok has no data path.
func (p *Provider) Capabilities() []provider.Capability { return Capabilities }

// Capabilities are what every cluster of this provider can do, known before one exists (the
// bed registration carries them, so a scenario runner can plan without bringing anything up).
var Capabilities = []provider.Capability{provider.CapabilityCreate, provider.CapabilityStopStart, provider.CapabilityFakeNodes}

// Ports are the ports of one cluster, chosen by the test bed so that clusters can be created
// at the same time without two picking the same one.
type Ports struct {
	KubeAPIServer, Etcd, EtcdPeer, KubeControllerManager, KubeScheduler, KwokController int
}

// clusterDir is the KWOK_WORKDIR of one cluster: one each, because kwokctl clusters created
// concurrently in one work directory trample each other.
func (p *Provider) clusterDir(name string) string { return filepath.Join(p.opts.Dir, name) }

func (p *Provider) kubeconfigPath(name string) string {
	return filepath.Join(p.clusterDir(name), "admin.kubeconfig")
}

// Context is the kubeconfig context of a kwok cluster.
func Context(name string) string { return "kwok-" + name }

func (p *Provider) kwokctl(name string, args ...string) shell.Cmd {
	return shell.Cmd{
		Path: p.bins.Kwokctl,
		Args: append(args, "--name", name),
		Env:  []string{"KWOK_WORKDIR=" + p.clusterDir(name)},
	}
}

// ports returns the cluster's ports, allocating and recording them on first use.
func (p *Provider) ports(name string) (Ports, error) {
	path := filepath.Join(p.clusterDir(name), "ports.json")
	var pp Ports
	if data, err := os.ReadFile(path); err == nil {
		return pp, json.Unmarshal(data, &pp)
	}
	free, err := ports.Free(6)
	if err != nil {
		return pp, err
	}
	pp = Ports{free[0], free[1], free[2], free[3], free[4], free[5]}
	data, _ := json.MarshalIndent(pp, "", "  ")
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return pp, err
	}
	return pp, os.WriteFile(path, data, 0o644)
}

// exists reports whether kwokctl knows the cluster.
func (p *Provider) exists(ctx context.Context, name string) (bool, error) {
	if _, err := os.Stat(filepath.Join(p.clusterDir(name), "clusters", name)); errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	out, err := p.kwokctl(name, "get", "clusters").Run(ctx)
	if err != nil {
		return false, err
	}
	return slices.Contains(strings.Fields(string(out)), name), nil
}

// Create implements provider.Provider.
func (p *Provider) Create(ctx context.Context, c topology.Cluster) (*provider.Cluster, error) {
	exists, err := p.exists(ctx, c.Name)
	if err != nil {
		return nil, err
	}
	if !exists {
		if err := p.create(ctx, c); err != nil {
			return nil, err
		}
	}
	cl := &provider.Cluster{Name: c.Name, Kubeconfig: p.kubeconfigPath(c.Name), Context: Context(c.Name)}
	cfg, err := cl.RESTConfig()
	if err != nil {
		return nil, err
	}
	if exists {
		// Left stopped by an earlier run or a fault: start it (a no-op when running).
		if _, err := p.kwokctl(c.Name, "start", "cluster").Run(ctx); err != nil {
			return nil, err
		}
	}
	if err := provider.WaitReady(ctx, cfg, p.opts.Topology.Wait(topology.WaitClusterReady), c.Name); err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	if err := EnsureFakeNodes(ctx, cs, c, p.opts.Topology.Wait(topology.WaitNodesReady)); err != nil {
		return nil, err
	}
	if err := warmAddressPools(ctx, cs, c, p.opts.Topology.Wait(topology.WaitNodesReady)); err != nil {
		return nil, err
	}
	return cl, nil
}

// warmAddressPools runs one pod on each fake node until it has an address, then deletes it,
// so that each node's address pool exists in kwok-controller before any other pod needs one.
// kwok v0.8.0 makes a node's pool on first use by loading, then storing
// (PodController.ipPool): two pods given the node's first address at the same moment each
// made their own pool and got the same address (seen once, pods before-0 and before-1 both
// 10.244.0.1, in TestProvider_PodIPsStayUniqueAcrossARestart run beside other packages).
func warmAddressPools(ctx context.Context, cs kubernetes.Interface, c topology.Cluster, w topology.Wait) error {
	pods := cs.CoreV1().Pods(metav1.NamespaceDefault)
	var names []string
	for i := range c.FakeNodes {
		node := fmt.Sprintf("%s-node-%d", c.Name, i)
		name := "polykube-testbed-address-pool-" + strconv.Itoa(i)
		names = append(names, name)
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault,
				Labels: map[string]string{"app.kubernetes.io/managed-by": "polykube-testbed"}},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "pool", Image: "polykube.invalid/address-pool"}}},
		}
		if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create pod %s on fake node %s (it makes the node's address pool): %w", name, node, err)
		}
	}
	err := wait.For(ctx, w, fmt.Sprintf("a pod on each of the %d fake nodes of %s to get an address", len(names), c.Name), func(ctx context.Context) error {
		for _, n := range names {
			pod, err := pods.Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if pod.Status.PodIP == "" {
				return fmt.Errorf("pod %s has no address yet", n)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := pods.Delete(ctx, n, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete pod %s: %w", n, err)
		}
	}
	return nil
}

const (
	// nodeLeaseSeconds is how long a fake node's lease outlives the kwok-controller holding
	// it: the longest a restarted cluster's pods wait to be managed again.
	nodeLeaseSeconds = 15
	// heartbeatFactor is kwokctl's default: node heartbeats five times slower than a kubelet's.
	heartbeatFactor = 5
)

func (p *Provider) create(ctx context.Context, c topology.Cluster) error {
	pp, err := p.ports(c.Name)
	if err != nil {
		return err
	}
	dir := p.clusterDir(c.Name)
	// The etcd peer port has no flag: it goes in a configuration file. So does the fake
	// nodes' lease duration: a kwok-controller started again (Stop leaves it running, but a
	// cluster can outlive its processes: a machine restarted under a kept test bed) has a new
	// identity and manages no node, so no pod becomes ready, until the previous controller's
	// leases expire: 200s by default. kwokctl multiplies the duration (and the
	// node heartbeats) by heartbeatFactor, which is stated here so the arithmetic is ours.
	conf := filepath.Join(dir, "kwokctl.yaml")
	if err := os.WriteFile(conf, fmt.Appendf(nil, "apiVersion: config.kwok.x-k8s.io/v1alpha1\nkind: KwokctlConfiguration\noptions:\n  etcdPeerPort: %d\n  heartbeatFactor: %d\n  nodeLeaseDurationSeconds: %d\n",
		pp.EtcdPeer, heartbeatFactor, nodeLeaseSeconds/heartbeatFactor), 0o644); err != nil {
		return err
	}
	args := []string{"create", "cluster",
		"--config", conf,
		"--runtime", "binary",
		"--kubeconfig", p.kubeconfigPath(c.Name),
		"--kube-apiserver-binary", p.bins.KubeAPIServer,
		"--kube-controller-manager-binary", p.bins.KubeControllerManager,
		"--kube-scheduler-binary", p.bins.KubeScheduler,
		"--etcd-binary", p.bins.Etcd,
		"--kwok-controller-binary", p.bins.KwokController,
		"--kube-apiserver-port", fmt.Sprint(pp.KubeAPIServer),
		"--etcd-port", fmt.Sprint(pp.Etcd),
		"--kube-controller-manager-port", fmt.Sprint(pp.KubeControllerManager),
		"--kube-scheduler-port", fmt.Sprint(pp.KubeScheduler),
		"--controller-port", fmt.Sprint(pp.KwokController),
		"--kube-authorization=true",
	}
	if c.ServiceCIDR != "" {
		args = append(args,
			"--extra-args", "kube-apiserver=service-cluster-ip-range="+c.ServiceCIDR,
			"--extra-args", "kube-controller-manager=service-cluster-ip-range="+c.ServiceCIDR)
	}
	if len(c.PodCIDRs) > 0 {
		args = append(args, "--extra-args", "kube-controller-manager=cluster-cidr="+strings.Join(c.PodCIDRs, ","))
	}
	// kwokctl exits 0 even when its own readiness wait fails, so we wait ourselves.
	if _, err := p.kwokctl(c.Name, args...).Run(ctx); err != nil {
		return fmt.Errorf("create kwok cluster %s: %w", c.Name, err)
	}
	return nil
}

// Delete implements provider.Provider.
func (p *Provider) Delete(ctx context.Context, name string) error {
	exists, err := p.exists(ctx, name)
	if err != nil {
		return err
	}
	pids := p.componentPIDs(name)
	if exists {
		if _, err := p.kwokctl(name, "delete", "cluster").Run(ctx); err != nil {
			return fmt.Errorf("delete kwok cluster %s: %w", name, err)
		}
	}
	if err := p.reap(ctx, name, pids); err != nil {
		return err
	}
	return os.RemoveAll(p.clusterDir(name))
}

// Stop implements provider.Provider: it stops the control plane (etcd, kube-apiserver,
// kube-controller-manager, kube-scheduler), keeping etcd's data, and leaves kwok-controller
// running, as a node's kubelet and its network plugin keep running while their control
// plane is away.
//
// kwok-controller plays both, and keeps the pod addresses it handed out in memory only: one
// started again learns the addresses of running pods only when it next changes them, and
// hands the first of them to the next new pods (kwok v0.8.0, pkg/kwok/controllers:
// PodController.markPodIP is called from a stage's patch step alone, and a running pod
// matches no default stage). Two pods with one address look like one backend to the mesh.
// Kept running, it keeps its pools and its node leases, so a started cluster's pods are also
// managed again at once rather than after the old leases expire. kwokctl has no command to
// stop one component, so the others are killed here through the PID files kwokctl writes,
// as its own stop does (SIGKILL, then the file removed: a SIGTERM lets kube-apiserver drain
// for seconds, which a stopped cluster does not do); `kwokctl start cluster` starts what has
// no live PID file and skips the running kwok-controller.
func (p *Provider) Stop(ctx context.Context, name string) error {
	cl, err := p.Kubeconfig(ctx, name)
	if err != nil {
		return err
	}
	var pids []int
	for _, f := range p.pidFiles(name) {
		if filepath.Base(f) == kwokControllerPIDFile {
			continue
		}
		pid, err := readPID(f)
		if err != nil {
			return fmt.Errorf("stop kwok cluster %s: %w", name, err)
		}
		if pid > 0 && proc.Alive(pid) {
			if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return fmt.Errorf("stop kwok cluster %s: signal PID %d (%s): %w", name, pid, f, err)
			}
			pids = append(pids, pid)
		}
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("stop kwok cluster %s: %w", name, err)
		}
	}
	if err := p.reap(ctx, name, pids); err != nil {
		return err
	}
	cfg, err := cl.RESTConfig()
	if err != nil {
		return err
	}
	return provider.WaitUnreachable(ctx, cfg, p.opts.Topology.Wait(topology.WaitClusterStopped), name)
}

// Start implements provider.Provider.
func (p *Provider) Start(ctx context.Context, name string) error {
	cl, err := p.Kubeconfig(ctx, name)
	if err != nil {
		return err
	}
	if _, err := p.kwokctl(name, "start", "cluster").Run(ctx); err != nil {
		return fmt.Errorf("start kwok cluster %s: %w", name, err)
	}
	cfg, err := cl.RESTConfig()
	if err != nil {
		return err
	}
	return provider.WaitReady(ctx, cfg, p.opts.Topology.Wait(topology.WaitClusterReady), name)
}

// Kubeconfig implements provider.Provider.
func (p *Provider) Kubeconfig(_ context.Context, name string) (*provider.Cluster, error) {
	path := p.kubeconfigPath(name)
	if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("kwok cluster %s does not exist (no %s): run `polykube-testbed up`", name, path)
	}
	return &provider.Cluster{Name: name, Kubeconfig: path, Context: Context(name)}, nil
}

// List implements provider.Provider: the clusters with a work directory.
func (p *Provider) List(ctx context.Context) ([]string, error) {
	entries, err := os.ReadDir(p.opts.Dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	var names []string
	for _, e := range entries {
		if e.IsDir() {
			names = append(names, e.Name())
		}
	}
	return names, err
}

// LogDir is where kwokctl keeps the component logs of a cluster.
func (p *Provider) LogDir(name string) string {
	return filepath.Join(p.clusterDir(name), "clusters", name, "logs")
}

// Ports returns the recorded ports of a cluster.
func (p *Provider) Ports(name string) (Ports, error) { return p.ports(name) }

// EnsureFakeNodes creates the cluster's fake nodes (annotated for kwok-controller, each with
// a /24 of the cluster's pod CIDR and its region and zone labels) and waits until they are
// Ready.
func EnsureFakeNodes(ctx context.Context, cs kubernetes.Interface, c topology.Cluster, w topology.Wait) error {
	var names []string
	for i := range c.FakeNodes {
		cidr, err := c.NodeCIDR(i)
		if err != nil {
			return err
		}
		name := fmt.Sprintf("%s-node-%d", c.Name, i)
		names = append(names, name)
		node := &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{
				Name:        name,
				Annotations: map[string]string{FakeNodeAnnotation: "fake"},
				Labels: map[string]string{
					"kubernetes.io/hostname":           name,
					"kubernetes.io/os":                 "linux",
					"kubernetes.io/arch":               "amd64",
					"type":                             "kwok",
					"node.kubernetes.io/instance-type": "kwok",
					"topology.kubernetes.io/region":    c.Region,
					"topology.kubernetes.io/zone":      c.Zone,
				},
			},
			Spec: corev1.NodeSpec{PodCIDR: cidr, PodCIDRs: []string{cidr}},
			Status: corev1.NodeStatus{
				Allocatable: resources("32", "256Gi", "110"),
				Capacity:    resources("32", "256Gi", "110"),
			},
		}
		if _, err := cs.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create fake node %s: %w", name, err)
		}
	}
	return wait.For(ctx, w, fmt.Sprintf("the %d fake nodes of %s to be Ready", len(names), c.Name), func(ctx context.Context) error {
		for _, n := range names {
			node, err := cs.CoreV1().Nodes().Get(ctx, n, metav1.GetOptions{})
			if err != nil {
				return err
			}
			if !nodeReady(node) {
				return fmt.Errorf("node %s is not Ready", n)
			}
		}
		return nil
	})
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func resources(cpu, mem, pods string) corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse(cpu),
		corev1.ResourceMemory: resource.MustParse(mem),
		corev1.ResourcePods:   resource.MustParse(pods),
	}
}

// pidFiles are the PID files kwokctl keeps for the cluster's components, one per binary,
// named after it.
func (p *Provider) pidFiles(name string) []string {
	files, _ := filepath.Glob(filepath.Join(p.clusterDir(name), "clusters", name, "pids", "*.pid"))
	return files
}

// kwokControllerPIDFile is the name of kwok-controller's PID file: kwokctl names each after
// the binary it runs, and links kwok-controller's into the cluster's directory under that name.
const kwokControllerPIDFile = "kwok-controller.pid"

func readPID(path string) (int, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		return 0, fmt.Errorf("PID file %s holds %q, not a PID", path, data)
	}
	return pid, nil
}

// componentPIDs reads the PIDs kwokctl recorded for the cluster's components.
func (p *Provider) componentPIDs(name string) []int {
	var pids []int
	for _, f := range p.pidFiles(name) {
		if pid, err := readPID(f); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}

// reap waits for the components kwokctl signalled to exit, and kills the ones that do not:
// kwokctl does not wait, and a kube-apiserver whose etcd is gone can hang in its graceful
// shutdown for good, keeping its port.
func (p *Provider) reap(ctx context.Context, name string, pids []int) error {
	w := p.opts.Topology.Wait(topology.WaitProcess)
	grace := time.Now().Add(w.Timeout.Duration / 3)
	return wait.For(ctx, w, fmt.Sprintf("the components of %s to exit", name), func(context.Context) error {
		var alive []string
		for _, pid := range pids {
			if !proc.Alive(pid) {
				continue
			}
			if time.Now().After(grace) {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
			alive = append(alive, strconv.Itoa(pid))
		}
		if len(alive) > 0 {
			return fmt.Errorf("PIDs %s still running", strings.Join(alive, ", "))
		}
		return nil
	})
}
