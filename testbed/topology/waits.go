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
)

// DefaultWaits are the timeouts and polling intervals used unless a topology overrides them.
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
