package harness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
)

// Datapath is what a federation with the datapath capability offers on top of Federation:
// real pods, Cilium ClusterMesh and a client to call services with.
type Datapath interface {
	// MeshReady returns nil when ClusterMesh connects every member.
	MeshReady(ctx context.Context) error
	// EchoTemplate is a pod template whose container answers HTTP on 8080 with the name of
	// the cluster it runs in.
	EchoTemplate() corev1.PodTemplateSpec
	// Call makes n requests from a client pod in cluster to namespace/service and returns the
	// answers in order: the answering cluster's name, or "" for a request that failed.
	Call(ctx context.Context, cluster, namespace, service string, n int) ([]string, error)
}

// Datapath returns the federation's datapath, or an error saying the provider has none.
func (sc *Scenario) Datapath() (Datapath, error) {
	var d Datapath
	ok := false
	switch f := sc.Fed.(type) {
	case *bedFederation:
		d, ok = f.datapath()
	case Datapath:
		d, ok = f, true
	}
	if !ok || !HasCapability(sc.Fed, CapabilityDatapath) {
		return nil, fmt.Errorf("the federation (provider %s) has no datapath: run @datapath scenarios with PROVIDER=kind", sc.Fed.Provider())
	}
	return d, nil
}
