package datapath

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/remotecommand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// agentStatus is the part of `cilium-dbg status -o json` (the agent's /v1/healthz model,
// api/v1/models StatusResponse) the test bed reads.
type agentStatus struct {
	ClusterMesh *struct {
		Clusters []struct {
			Name   string `json:"name"`
			Ready  bool   `json:"ready"`
			Status string `json:"status"`
		} `json:"clusters"`
	} `json:"cluster-mesh"`
}

// MeshReport is, for one agent, which remote clusters it reports ready and what it says of the
// others.
type MeshReport struct {
	Pod      string
	Ready    []string
	NotReady map[string]string
}

// ParseMeshStatus reads an agent's `cilium-dbg status -o json` and says which of want are
// ready; a remote cluster the agent does not list at all is not ready ("not configured").
func ParseMeshStatus(pod string, data []byte, want []string) (MeshReport, error) {
	var st agentStatus
	if err := json.Unmarshal(data, &st); err != nil {
		return MeshReport{}, fmt.Errorf("read cilium-dbg status of %s: %w", pod, err)
	}
	r := MeshReport{Pod: pod, NotReady: map[string]string{}}
	seen := map[string]bool{}
	if st.ClusterMesh != nil {
		for _, c := range st.ClusterMesh.Clusters {
			seen[c.Name] = true
			if !slices.Contains(want, c.Name) {
				continue
			}
			if c.Ready {
				r.Ready = append(r.Ready, c.Name)
			} else {
				r.NotReady[c.Name] = c.Status
			}
		}
	}
	for _, w := range want {
		if !seen[w] {
			r.NotReady[w] = "not configured in this agent"
		}
	}
	slices.Sort(r.Ready)
	return r, nil
}

// Err is nil when every wanted cluster is ready.
func (r MeshReport) Err() error {
	if len(r.NotReady) == 0 {
		return nil
	}
	var parts []string
	for _, n := range sortedNames(r.NotReady) {
		parts = append(parts, fmt.Sprintf("%s: %s", n, r.NotReady[n]))
	}
	return fmt.Errorf("agent %s: remote clusters not ready: %s", r.Pod, strings.Join(parts, "; "))
}

func sortedNames(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// MeshStatus waits until every agent of every member reports every other member ready, asking
// each agent itself (`cilium-dbg status -o json` in the agent container, the same status the
// cilium CLI's `clustermesh status` reads); it is also the harness's MeshReady.
func MeshStatus(ctx context.Context, e *Env) error {
	if len(e.Members) < 2 {
		return nil
	}
	if !e.Runner.Note("wait until every Cilium agent of every cluster reports the other clusters ready (cilium-dbg status -o json in each agent)") {
		return nil
	}
	return e.each(func(m Member) error {
		var want []string
		for _, o := range e.Members {
			if o.Name != m.Name {
				want = append(want, o.CiliumName()) // the agents report peers by Cilium's name
			}
		}
		agents := 0
		if err := wait.For(ctx, e.wait(topology.WaitMeshReady), "ClusterMesh in "+m.Name+" to be ready", func(ctx context.Context) error {
			var err error
			agents, err = agentsMeshReady(ctx, e, m, want)
			return err
		}); err != nil {
			return err
		}
		fmt.Fprintf(e.Out, "   %s: every agent (%d) sees %s ready\n", m.Name, agents, strings.Join(want, ", "))
		return nil
	})
}

// agentsMeshReady returns how many agents of m report every cluster of want ready.
func agentsMeshReady(ctx context.Context, e *Env, m Member, want []string) (int, error) {
	cl, err := e.Client(m)
	if err != nil {
		return 0, err
	}
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(CiliumNamespace), client.MatchingLabels{CiliumAgentPodLabel: CiliumAgentPodLabelV}); err != nil {
		return 0, err
	}
	if len(pods.Items) == 0 {
		return 0, fmt.Errorf("no Cilium agent pods in %s", m.Name)
	}
	for _, p := range pods.Items {
		out, err := Exec(ctx, m, CiliumNamespace, p.Name, "cilium-agent", "cilium-dbg", "status", "-o", "json")
		if err != nil {
			return 0, err
		}
		r, err := ParseMeshStatus(p.Name, out, want)
		if err != nil {
			return 0, err
		}
		if err := r.Err(); err != nil {
			return 0, err
		}
	}
	return len(pods.Items), nil
}

// Exec runs a command in a container of a member's pod, as `kubectl exec` does, and returns its
// standard output; a failure carries its standard error.
func Exec(ctx context.Context, m Member, namespace, pod, container string, command ...string) ([]byte, error) {
	cfg, err := provider.RESTConfig(m.Kubeconfig, m.Context)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	req := cs.CoreV1().RESTClient().Post().Resource("pods").Namespace(namespace).Name(pod).SubResource("exec").
		VersionedParams(&corev1.PodExecOptions{Container: container, Command: command, Stdout: true, Stderr: true}, scheme.ParameterCodec)
	ex, err := remotecommand.NewSPDYExecutor(cfg, "POST", req.URL())
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	if err := ex.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr}); err != nil {
		return stdout.Bytes(), fmt.Errorf("exec %s in %s/%s (%s) in %s: %w: %s", strings.Join(command, " "), namespace, pod, container, m.Name, err, strings.TrimSpace(stderr.String()))
	}
	return stdout.Bytes(), nil
}
