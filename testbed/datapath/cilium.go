package datapath

import (
	"context"
	"encoding/base64"
	"fmt"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/wait"
)

// ClusterMeshNodePortBase is the clustermesh-apiserver NodePort of the first cluster; the
// i-th cluster uses base+i. Distinct ports are needed because with kube-proxy replacement a
// NodePort that is the same in two clusters is always answered by the local cluster
// (cilium/cilium#24692), so the remote clustermesh-apiserver would never be reached.
const ClusterMeshNodePortBase = 32379

// CiliumNamespace is where Cilium runs, and CiliumRelease its Helm release.
const (
	CiliumNamespace = "kube-system"
	CiliumRelease   = "cilium"
)

// The objects of Cilium's chart the test bed waits on.
const (
	CiliumAgentDaemonSet  = "cilium"
	CiliumOperatorName    = "cilium-operator"
	ClusterMeshAPIServer  = "clustermesh-apiserver"
	CiliumAgentPodLabel   = "k8s-app"
	CiliumAgentPodLabelV  = "cilium"
	CoreDNSDeploymentName = "coredns"
)

// ClusterMeshNodePort is the clustermesh-apiserver NodePort of a member.
func ClusterMeshNodePort(m Member) int { return ClusterMeshNodePortBase + m.Index }

// LocalImageRepo is where scripts/images/cilium.sh (make images-cilium) puts the Cilium images
// it builds from module source.
const LocalImageRepo = "polykube.local/cilium"

// CiliumImages are the images the chart runs; empty fields keep the chart's own (quay.io).
type CiliumImages struct {
	Agent, Operator, ClusterMeshAPIServer string
	// PullPolicy is every Cilium image's pull policy ("" keeps the chart's IfNotPresent).
	PullPolicy corev1.PullPolicy
}

// LocalCiliumImages are the images built on this machine, which nothing may pull.
func LocalCiliumImages() CiliumImages {
	v := toolchain.CiliumVersion
	return CiliumImages{
		Agent:                LocalImageRepo + "/cilium:" + v,
		Operator:             LocalImageRepo + "/operator-generic:" + v,
		ClusterMeshAPIServer: LocalImageRepo + "/clustermesh-apiserver:" + v,
		PullPolicy:           corev1.PullNever,
	}
}

// List is the image references set, in a stable order (what must be loaded into the nodes).
func (i CiliumImages) List() []string {
	var out []string
	for _, s := range []string{i.Agent, i.Operator, i.ClusterMeshAPIServer} {
		if s != "" {
			out = append(out, s)
		}
	}
	return out
}

// MeshPeer is another cluster's clustermesh-apiserver as this cluster's agents reach it.
type MeshPeer struct {
	Name string
	IPs  []string
	Port int
}

// CiliumOptions are what a member's Cilium values depend on besides the member.
type CiliumOptions struct {
	Images CiliumImages
	// KubeProxyReplacement replaces kube-proxy with Cilium's eBPF service handling (socket LB
	// included). It needs cgroup v2 with a cgroup namespace per node; on a cgroup v1 or hybrid
	// host keep kube-proxy and leave this off: Cilium then still balances ClusterIP traffic of
	// pods (and so global services) in its tc programs.
	KubeProxyReplacement bool
	// MissingCapabilities are capabilities the host cannot grant (not in its bounding set):
	// they are left out of the chart's capability lists, or the agent's containers fail to start.
	MissingCapabilities []string
	// CA signs the ClusterMesh certificates; the same in every member of a mesh.
	CA *CA
	// Peers are the other members; none means no ClusterMesh.
	Peers []MeshPeer
	// MTU, when set, is the MTU of the network between the nodes as Cilium must assume it
	// (Helm MTU): the WireGuard interface's on an isolated topology, from which Cilium takes
	// VXLAN's 50 bytes for the pods. Unset, Cilium reads the MTU of the node's device.
	MTU int
}

// ClusterMeshCacheTTL is how long a member keeps what it learnt from a peer once it has
// declared the connection to that peer lost (Helm clustermesh.cacheTTL, the agents' and
// cilium-operator's clustermesh-cache-ttl). Cilium's default, 0s, keeps it for ever: a stopped
// cluster's backends would stay in every global Service, and its mirrored EndpointSlices, the
// signal of capacity failover (decision 0006), would never go.
//
// The TTL's clock does not start when the peer stops: Cilium 1.20 declares a peer lost only
// when the heartbeat key its clustermesh-apiserver rewrites every minute has not changed for
// over 2 minutes, seen at a status check (every 30 s in the operator, 30 s × ln(1+nodes) in
// the agents). Neither is a setting, and the etcd keepalive (etcd.keepaliveHeartbeat/Timeout)
// only recycles the gRPC connection without declaring anything. A stopped or cut-off peer
// therefore leaves the mesh 60 to 150 s (operator) after it stopped, plus this TTL:
// docs/datapath.md, "How long Cilium takes to drop a lost peer". A shorter TTL saves only its
// own seconds; its cost is that a peer whose clustermesh-apiserver restarts (a new etcd) and
// takes longer than the TTL to answer again is drained and refilled, its backends and
// mirrored slices gone meanwhile.
const ClusterMeshCacheTTL = 10 * time.Second

// The capabilities the chart's securityContext lists (values.yaml), which MissingCapabilities
// is removed from.
var (
	ciliumAgentCapabilities = []string{"CHOWN", "KILL", "NET_ADMIN", "NET_RAW", "IPC_LOCK", "SYS_MODULE",
		"SYS_ADMIN", "SYS_RESOURCE", "DAC_OVERRIDE", "FOWNER", "SETGID", "SETUID", "SYSLOG"}
	ciliumCleanStateCapabilities = []string{"NET_ADMIN", "SYS_MODULE", "SYS_ADMIN", "SYS_RESOURCE"}
)

// CiliumValues are the Helm values of a member's Cilium: its mesh identity (cluster.name, the
// member's name unless the topology gives it another meshName, and the unique cluster.id), IPAM from the node's pod CIDR (kind's controller-manager allocates it
// from the topology's pod subnet), VXLAN tunnelling, the API server as the nodes reach it, the
// images, Envoy and Hubble off, and ClusterMesh through a clustermesh-apiserver on its own
// NodePort, with every peer listed and one CA for all.
func CiliumValues(m Member, o CiliumOptions) map[string]any {
	image := func(ref string) map[string]any {
		v := map[string]any{}
		if ref != "" {
			v["override"] = ref
			v["useDigest"] = false
		}
		if o.Images.PullPolicy != "" {
			v["pullPolicy"] = string(o.Images.PullPolicy)
		}
		return v
	}
	without := func(caps []string) []any {
		var out []any
		for _, c := range caps {
			if !slices.Contains(o.MissingCapabilities, c) {
				out = append(out, c)
			}
		}
		return out
	}
	v := map[string]any{
		"cluster":              map[string]any{"name": m.CiliumName(), "id": int(m.ClusterID)},
		"ipam":                 map[string]any{"mode": "kubernetes"},
		"routingMode":          "tunnel",
		"tunnelProtocol":       "vxlan",
		"kubeProxyReplacement": o.KubeProxyReplacement,
		"k8sServiceHost":       m.APIHost,
		"k8sServicePort":       m.APIPort,
		"image":                image(o.Images.Agent),
		"operator":             map[string]any{"replicas": 1, "image": image(o.Images.Operator)},
		"envoy":                map[string]any{"enabled": false},
		"l7Proxy":              false,
		"hubble":               map[string]any{"enabled": false},
	}
	if !o.KubeProxyReplacement {
		v["socketLB"] = map[string]any{"enabled": false}
	}
	if o.MTU > 0 {
		v["MTU"] = o.MTU
	}
	if len(o.MissingCapabilities) > 0 {
		v["securityContext"] = map[string]any{"capabilities": map[string]any{
			"ciliumAgent":      without(ciliumAgentCapabilities),
			"cleanCiliumState": without(ciliumCleanStateCapabilities),
		}}
	}
	if len(o.Peers) > 0 {
		var clusters []any
		for _, p := range o.Peers {
			ips := make([]any, len(p.IPs))
			for i, ip := range p.IPs {
				ips[i] = ip
			}
			clusters = append(clusters, map[string]any{"name": p.Name, "port": p.Port, "ips": ips})
		}
		v["clustermesh"] = map[string]any{
			"useAPIServer": true,
			"apiserver": map[string]any{
				"image":       image(o.Images.ClusterMeshAPIServer),
				"service":     map[string]any{"type": "NodePort", "nodePort": ClusterMeshNodePort(m)},
				"tls":         map[string]any{"auto": map[string]any{"enabled": true, "method": "helm"}},
				"kvstoremesh": map[string]any{"enabled": false},
			},
			"config": map[string]any{"enabled": true, "clusters": clusters},
			// The operator mirrors the peers' backends of a global Service annotated
			// service.cilium.io/global-sync-endpoint-slices as EndpointSlices here: what the
			// Polykube operators count for capacity failover (internal/meshview).
			"enableEndpointSliceSynchronization": true,
			"cacheTTL":                           ClusterMeshCacheTTL.String(),
		}
	}
	if o.CA != nil {
		v["tls"] = map[string]any{"ca": map[string]any{
			"cert": base64.StdEncoding.EncodeToString(o.CA.CertPEM),
			"key":  base64.StdEncoding.EncodeToString(o.CA.KeyPEM),
		}}
	}
	return v
}

// MarshalValues renders values as YAML, as `helm get values` shows them (for dry runs and
// golden files).
func MarshalValues(v map[string]any) ([]byte, error) { return yaml.Marshal(v) }

// InstallCilium installs (or upgrades) Cilium in every member with the Helm SDK and the chart
// of the pinned Cilium module; options gives each member's options. It does not wait: see
// WaitCilium.
func InstallCilium(ctx context.Context, e *Env, options func(Member) CiliumOptions) error {
	return InstallCiliumIn(ctx, e, nil, options)
}

// InstallCiliumIn is InstallCilium in the named members only (every member when names is
// empty).
func InstallCiliumIn(ctx context.Context, e *Env, names []string, options func(Member) CiliumOptions) error {
	var chart string
	if !e.Runner.DryRun() {
		var err error
		if chart, err = toolchain.CiliumChart(ctx); err != nil {
			return err
		}
	}
	return e.each(func(m Member) error {
		if len(names) > 0 && !slices.Contains(names, m.Name) {
			return nil
		}
		vals := CiliumValues(m, options(m))
		data, err := MarshalValues(vals)
		if err != nil {
			return err
		}
		if !e.Runner.Note("helm upgrade --install %s %s/%s (chart %s of github.com/cilium/cilium@%s) in %s, values:\n%s",
			CiliumRelease, CiliumNamespace, CiliumRelease, toolchain.CiliumChartPath, toolchain.CiliumVersion, m.Context, redactCA(data)) {
			return nil
		}
		rel := HelmRelease{Kubeconfig: m.Kubeconfig, Context: m.Context, Namespace: CiliumNamespace, Name: CiliumRelease,
			Chart: chart, Values: vals, Timeout: 2 * time.Minute}
		_, err = rel.UpgradeInstall(ctx)
		return err
	})
}

// redactCA keeps the CA's key out of printed plans.
func redactCA(values []byte) []byte {
	var v map[string]any
	if err := yaml.Unmarshal(values, &v); err != nil {
		return values
	}
	if tls, ok := v["tls"].(map[string]any); ok {
		if ca, ok := tls["ca"].(map[string]any); ok {
			ca["cert"], ca["key"] = "<the run's CA certificate>", "<the run's CA key>"
		}
	}
	out, err := yaml.Marshal(v)
	if err != nil {
		return values
	}
	return out
}

// WaitCilium waits in every member until Cilium's agents run on every node and its operator is
// available, then until every node is Ready and CoreDNS (which needs the CNI) is available.
func WaitCilium(ctx context.Context, e *Env) error {
	if !e.Runner.Note("wait until DaemonSet %s/%s and Deployment %s are ready, every node is Ready and CoreDNS is available, in every cluster",
		CiliumNamespace, CiliumAgentDaemonSet, CiliumOperatorName) {
		return nil
	}
	return e.each(func(m Member) error {
		cl, err := e.Client(m)
		if err != nil {
			return err
		}
		w := e.wait(WaitCiliumReady)
		if err := wait.For(ctx, w, "Cilium's agents in "+m.Name+" to be ready", func(ctx context.Context) error {
			return daemonSetReady(ctx, cl, CiliumNamespace, CiliumAgentDaemonSet)
		}); err != nil {
			return fmt.Errorf("%w%s", err, agentPodHint(ctx, cl))
		}
		for _, d := range []string{CiliumOperatorName, CoreDNSDeploymentName} {
			if err := wait.For(ctx, w, "Deployment "+CiliumNamespace+"/"+d+" in "+m.Name+" to be available", func(ctx context.Context) error {
				return deploymentAvailable(ctx, cl, CiliumNamespace, d)
			}); err != nil {
				return err
			}
		}
		return wait.For(ctx, w, "every node of "+m.Name+" to be Ready", func(ctx context.Context) error {
			return nodesReady(ctx, cl)
		})
	})
}

func daemonSetReady(ctx context.Context, cl client.Client, ns, name string) error {
	var ds appsv1.DaemonSet
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &ds); err != nil {
		return err
	}
	s := ds.Status
	if s.ObservedGeneration < ds.Generation || s.DesiredNumberScheduled == 0 ||
		s.NumberReady < s.DesiredNumberScheduled || s.UpdatedNumberScheduled < s.DesiredNumberScheduled {
		return fmt.Errorf("DaemonSet %s/%s: %d of %d pods ready", ns, name, s.NumberReady, s.DesiredNumberScheduled)
	}
	return nil
}

func deploymentAvailable(ctx context.Context, cl client.Client, ns, name string) error {
	var d appsv1.Deployment
	if err := cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &d); err != nil {
		return err
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if d.Status.ObservedGeneration < d.Generation || d.Status.AvailableReplicas < want || d.Status.UpdatedReplicas < want {
		return fmt.Errorf("Deployment %s/%s: %d of %d replicas available", ns, name, d.Status.AvailableReplicas, want)
	}
	return nil
}

func nodesReady(ctx context.Context, cl client.Client) error {
	var nodes corev1.NodeList
	if err := cl.List(ctx, &nodes); err != nil {
		return err
	}
	if len(nodes.Items) == 0 {
		return fmt.Errorf("no nodes registered")
	}
	for _, n := range nodes.Items {
		ready := false
		for _, c := range n.Status.Conditions {
			if c.Type == corev1.NodeReady {
				ready = c.Status == corev1.ConditionTrue
				if !ready {
					return fmt.Errorf("node %s is not Ready: %s", n.Name, c.Message)
				}
			}
		}
		if !ready {
			return fmt.Errorf("node %s reports no Ready condition", n.Name)
		}
	}
	return nil
}

// agentPodHint names the first agent pod that is not running and why (an image that cannot be
// pulled is the usual reason with local images: make images-cilium).
func agentPodHint(ctx context.Context, cl client.Client) string {
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(CiliumNamespace), client.MatchingLabels{CiliumAgentPodLabel: CiliumAgentPodLabelV}); err != nil {
		return ""
	}
	for _, p := range pods.Items {
		for _, st := range append(p.Status.InitContainerStatuses, p.Status.ContainerStatuses...) {
			if w := st.State.Waiting; w != nil && w.Reason != "PodInitializing" {
				hint := ""
				if w.Reason == "ErrImageNeverPull" || w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff" {
					hint = " (build and load the local images: make images-cilium)"
				}
				return fmt.Sprintf("; pod %s container %s: %s: %s%s", p.Name, st.Name, w.Reason, w.Message, hint)
			}
			if t := st.State.Terminated; t != nil && t.ExitCode != 0 {
				return fmt.Sprintf("; pod %s container %s exited %d: %s (kubectl logs -n %s %s -c %s)", p.Name, st.Name, t.ExitCode, t.Reason, CiliumNamespace, p.Name, st.Name)
			}
		}
	}
	return ""
}
