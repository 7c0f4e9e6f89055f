package topology

import "time"

// Names of the waits a topology can tune under `waits:`.
const (
	WaitClusterReady   = "cluster-ready"   // a new or restarted API server answers /readyz and has its default ServiceAccount
	WaitClusterStopped = "cluster-stopped" // a stopped API server stops answering
	WaitNodesReady     = "nodes-ready"     // the fake nodes report Ready
	WaitCRDs           = "crds-established"
	WaitProcess        = "process"        // a process starts serving, or exits after a signal
	WaitFluxReady      = "flux-ready"     // GitRepository and Kustomization Ready after install
	WaitDelivery       = "delivery"       // a Git revision applied by every cluster's Kustomization
	WaitOperatorReady  = "operator-ready" // the operator's ServiceAccount exists and its process is healthy
	WaitReconciled     = "reconciled"     // the operators reconciled what Flux delivered

	// The waits of the beds whose add-ons run in their clusters (real nodes pull images and
	// start eBPF datapaths, which takes minutes, not seconds).
	WaitMeshReady   = "mesh-ready"   // every Cilium agent reports every remote cluster ready
	WaitCiliumReady = "cilium-ready" // Cilium's agents and operator ready, nodes Ready, CoreDNS up
	WaitRollout     = "rollout"      // a Deployment (the operator, the echo server) becomes available, or its pods go
	WaitProbe       = "probe"        // a routing probe Job finishes, or a one-off pod ends
	WaitRouted      = "routed"       // the demo's calls reach what the mesh should route them to (ClusterMesh's sync, Cilium dropping a stopped cluster's backends)
)

// DefaultWaits are the timeouts and polling intervals used unless a topology overrides them:
// the one table of the test bed's waits, for every bed.
var DefaultWaits = map[string]Wait{
	WaitClusterReady:   {Timeout: Duration{2 * time.Minute}, Interval: Duration{250 * time.Millisecond}},
	WaitClusterStopped: {Timeout: Duration{30 * time.Second}, Interval: Duration{100 * time.Millisecond}},
	WaitNodesReady:     {Timeout: Duration{time.Minute}, Interval: Duration{250 * time.Millisecond}},
	WaitCRDs:           {Timeout: Duration{time.Minute}, Interval: Duration{250 * time.Millisecond}},
	WaitProcess:        {Timeout: Duration{30 * time.Second}, Interval: Duration{100 * time.Millisecond}},
	WaitFluxReady:      {Timeout: Duration{3 * time.Minute}, Interval: Duration{500 * time.Millisecond}},
	WaitDelivery:       {Timeout: Duration{2 * time.Minute}, Interval: Duration{500 * time.Millisecond}},
	WaitOperatorReady:  {Timeout: Duration{2 * time.Minute}, Interval: Duration{500 * time.Millisecond}},
	WaitReconciled:     {Timeout: Duration{2 * time.Minute}, Interval: Duration{500 * time.Millisecond}},
	WaitMeshReady:      {Timeout: Duration{10 * time.Minute}, Interval: Duration{5 * time.Second}},
	WaitCiliumReady:    {Timeout: Duration{10 * time.Minute}, Interval: Duration{2 * time.Second}},
	WaitRollout:        {Timeout: Duration{10 * time.Minute}, Interval: Duration{2 * time.Second}},
	WaitProbe:          {Timeout: Duration{5 * time.Minute}, Interval: Duration{2 * time.Second}},
	WaitRouted:         {Timeout: Duration{6 * time.Minute}, Interval: Duration{5 * time.Second}},
}

// Wait returns the timeout and interval for a named wait: the topology's override, else the
// default. An unknown name gets one minute, polled every half second.
func (t *Topology) Wait(name string) Wait {
	w, ok := DefaultWaits[name]
	if !ok {
		w = Wait{Timeout: Duration{time.Minute}, Interval: Duration{500 * time.Millisecond}}
	}
	if o, ok := t.Waits[name]; ok {
		w.Timeout = o.Timeout
		if o.Interval.Duration > 0 {
			w.Interval = o.Interval
		}
	}
	return w
}
