package harness

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/testbed/datapath"
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
	// CallPayload makes n requests as Call does, each answer carrying bytes bytes checked byte
	// by byte, and returns every call's record (who answered, the bytes that arrived whole, the
	// time to the last of them, or the error).
	CallPayload(ctx context.Context, cluster, namespace, service string, n int, bytes int64) ([]datapath.CallRecord, error)
	// Backends is the number of active backends every Cilium agent of cluster holds for the
	// ClusterIP of namespace/service on port (the least over the agents).
	Backends(ctx context.Context, cluster, namespace, service string, port int32) (int, error)
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

// CallSynced calls the Service n times from a client in cluster, once the cluster's Cilium
// balances over exactly the backends the mesh should give it: its own ready endpoints and,
// for a global Service, those of every peer whose Service is global and shared. A probe that
// judged earlier could race ClusterMesh's synchronisation (a peer's backends not there yet,
// or a stopped peer's still there). The wait is bounded by the converge wait.
func (sc *Scenario) CallSynced(ctx context.Context, dp Datapath, cluster, service string, port int32, n int) ([]string, error) {
	if err := sc.awaitBalanced(ctx, dp, cluster, service, port); err != nil {
		return nil, err
	}
	return dp.Call(ctx, cluster, sc.Namespace, service, n)
}

// awaitBalanced waits until the cluster's Cilium balances service over the backends the mesh
// gives it.
func (sc *Scenario) awaitBalanced(ctx context.Context, dp Datapath, cluster, service string, port int32) error {
	what := fmt.Sprintf("Cilium in %q to balance %s over the backends the mesh gives it", cluster, service)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		want, why, err := sc.expectedBackends(ctx, cluster, service)
		if err != nil {
			return err
		}
		got, err := dp.Backends(ctx, cluster, sc.Namespace, service, port)
		if err != nil {
			return err
		}
		if got != want {
			return fmt.Errorf("it holds %d active backends, the mesh should give it %d (%s)", got, want, why)
		}
		return nil
	})
}

// CallPayloadSynced is CallSynced for calls whose answers carry bytes bytes each: it waits for
// the cluster's Cilium to balance over the backends the mesh gives it, then calls.
func (sc *Scenario) CallPayloadSynced(ctx context.Context, dp Datapath, cluster, service string, port int32, n int, bytes int64) ([]datapath.CallRecord, error) {
	if err := sc.awaitBalanced(ctx, dp, cluster, service, port); err != nil {
		return nil, err
	}
	return dp.CallPayload(ctx, cluster, sc.Namespace, service, n, bytes)
}

// expectedBackends counts the backends the cluster's Cilium should balance service over: the
// ready endpoints of its own Service and, when that Service is global, those of every peer
// whose Service is global and shared, chosen by the Service's affinity (meshBackends). A
// peer that cannot be read (stopped), or that a network partition separates from cluster,
// contributes none: the mesh must have dropped its backends.
func (sc *Scenario) expectedBackends(ctx context.Context, cluster, service string) (int, string, error) {
	local, global, _, affinity, err := sc.readyEndpoints(ctx, cluster, service)
	if err != nil {
		return 0, "", fmt.Errorf("cluster %q: %w", cluster, err)
	}
	parts := []string{fmt.Sprintf("%s %d", cluster, local)}
	if !global {
		return local, strings.Join(parts, ", "), nil
	}
	remote := 0
	for _, c := range sc.OtherClusters(cluster) {
		if sc.cutOff(cluster, c) {
			parts = append(parts, c+" partitioned off: 0")
			continue
		}
		n, global, shared, _, err := sc.readyEndpoints(ctx, c, service)
		switch {
		case err != nil:
			parts = append(parts, c+" unreachable: 0")
		case !global || !shared:
			parts = append(parts, c+" not shared: 0")
		default:
			remote += n
			parts = append(parts, fmt.Sprintf("%s %d", c, n))
		}
	}
	if affinity != "" && affinity != "none" {
		parts = append(parts, "affinity "+affinity)
	}
	return meshBackends(local, remote, affinity), strings.Join(parts, ", "), nil
}

// meshBackends is how many of a global Service's backends Cilium 1.20 programs for it, as its
// ClusterMesh backend selection does (pkg/clustermesh/selectbackends.go): with affinity local
// only the local ones while there is one, the remote ones otherwise; with affinity remote the
// reverse; with none (or no annotation) all of them.
func meshBackends(local, remote int, affinity string) int {
	switch affinity {
	case "local":
		if local > 0 {
			return local
		}
		return remote
	case "remote":
		if remote > 0 {
			return remote
		}
		return local
	}
	return local + remote
}

// readyEndpoints counts the ready endpoints in the cluster's own EndpointSlices of service (not
// those mirrored from peers) and says whether its Service is global and shared.
func (sc *Scenario) readyEndpoints(ctx context.Context, cluster, service string) (n int, global, shared bool, affinity string, err error) {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return 0, false, false, "", err
	}
	svc := &corev1.Service{}
	if err := c.Get(ctx, types.NamespacedName{Namespace: sc.Namespace, Name: service}, svc); err != nil {
		return 0, false, false, "", fmt.Errorf("read Service %s: %w", service, err)
	}
	global = svc.Annotations[meshview.GlobalAnnotation] == "true"
	shared = svc.Annotations[meshview.SharedAnnotation] != "false"
	affinity = svc.Annotations[meshview.AffinityAnnotation]
	var slices discoveryv1.EndpointSliceList
	if err := c.List(ctx, &slices, client.InNamespace(sc.Namespace), client.MatchingLabels{
		discoveryv1.LabelServiceName: service, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io",
	}); err != nil {
		return 0, false, false, "", fmt.Errorf("list the EndpointSlices of %s: %w", service, err)
	}
	seen := map[string]bool{}
	for _, s := range slices.Items {
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			for _, a := range ep.Addresses {
				seen[a] = true
			}
		}
	}
	return len(seen), global, shared, affinity, nil
}
