package host

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"time"

	"github.com/polykube/polykube/testbed/meshmirror"
	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
)

// meshMirrorProc is the process name of the mesh mirror.
const meshMirrorProc = "mesh-mirror"

// MeshMirrorState records the mesh-mirror add-on.
type MeshMirrorState struct {
	// Addr is the loopback host:port of its /healthz and /status.
	Addr string `json:"addr,omitempty"`
}

// upMeshMirror starts the mesh mirror (package meshmirror) with every cluster's admin
// kubeconfig: the test bed holds them all, the operators still only their own. It answers
// /healthz once it has read every cluster once.
func (tb *Testbed) upMeshMirror(ctx context.Context, self string) error {
	self, err := tb.selfBinary(ctx, self)
	if err != nil {
		return err
	}
	if tb.state.MeshMirror.Addr == "" {
		p, err := ports.Free(1)
		if err != nil {
			return err
		}
		tb.state.MeshMirror.Addr = fmt.Sprintf("127.0.0.1:%d", p[0])
	}
	top := tb.state.Topology
	args := []string{"serve-mesh-mirror", "--listen", tb.state.MeshMirror.Addr,
		"--interval", top.MeshMirror.Interval.Duration.String(), "--cache-ttl", top.MeshMirror.CacheTTL.Duration.String()}
	for _, c := range top.Clusters {
		cs := tb.state.Clusters[c.Name]
		if cs == nil {
			return fmt.Errorf("cluster %s is not up", c.Name)
		}
		args = append(args, "--cluster", c.Name+"="+cs.Kubeconfig)
	}
	if err := tb.saveState(); err != nil {
		return err
	}
	return tb.startProc(ctx, proc.Spec{Name: meshMirrorProc, Path: self, Args: args, HealthURL: "http://" + tb.state.MeshMirror.Addr + "/healthz"})
}

// MeshMirrorStatus is what the run's mesh mirror reports (meshmirror.Status); an error when
// the run has no mesh-mirror add-on or it does not answer.
func (tb *Testbed) MeshMirrorStatus(ctx context.Context) (*meshmirror.Status, error) {
	if !tb.state.Topology.HasAddon(topology.AddonMeshMirror) {
		return nil, fmt.Errorf("run %s has no mesh-mirror add-on", tb.state.Topology.Name)
	}
	if _, ok := tb.procs.Running(meshMirrorProc); !ok {
		return nil, fmt.Errorf("the mesh mirror is not running; see its log %s", tb.procs.LogPath(meshMirrorProc))
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+tb.state.MeshMirror.Addr+"/status", nil)
	if err != nil {
		return nil, err
	}
	resp, err := (&http.Client{Timeout: 2 * time.Second}).Do(req)
	if err != nil {
		return nil, fmt.Errorf("ask the mesh mirror: %w", err)
	}
	defer resp.Body.Close()
	var st meshmirror.Status
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("read the mesh mirror's status: %w", err)
	}
	return &st, nil
}
