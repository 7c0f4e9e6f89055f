// Package meshview reads, from one cluster's own API, how many ready endpoints each peer
// cluster serves for a global Service: the signal of capacity failover (decision 0006).
//
// Cilium 1.20's operator, with --clustermesh-enable-endpoint-sync (Helm
// clustermesh.enableEndpointSliceSynchronization), mirrors the backends that peers export for a
// Service annotated service.cilium.io/global-sync-endpoint-slices: "true" as EndpointSlices in
// this cluster, one set per peer, labelled endpointslice.kubernetes.io/managed-by:
// endpointslice-mesh-controller.cilium.io and multicluster.kubernetes.io/source-cluster: <peer>
// (github.com/cilium/cilium@v1.20.2 pkg/clustermesh/endpointslicesync). Cilium copies the local
// Service's labels onto those slices, Polykube's managed-by label among them, so the operator's
// cache, which holds only the EndpointSlices carrying it, holds them: counting them needs
// nothing but this cluster's read access.
//
// What the mirror says, and when it stops saying it:
//   - a peer exports every backend that is ready or still serving while terminating
//     (operator/watchers/service_sync.go), and the mirror marks each one ready
//     (endpointslicesync/pod_informer.go), so a peer's count includes pods that are on their
//     way out during a rollout;
//   - each backend address is a fake pod of its own, so a dual-stack peer appears once per
//     address family: counts are taken per address type and the largest is the peer's;
//   - a peer that disappears keeps its mirrored slices until clustermesh.cacheTTL expires
//     (--clustermesh-cache-ttl; the default 0s never revokes them), so failover of a dead
//     cluster needs a non-zero cacheTTL.
//
// The package is pure: callers pass the slices they listed (Selector selects them).
package meshview

import (
	"fmt"
	"sort"
	"strings"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"

	"github.com/polykube/polykube/placement"
)

const (
	// GlobalAnnotation makes a Service global in ClusterMesh, SharedAnnotation "false" keeps
	// this cluster's endpoints out of the others (Cilium's pkg/annotation: ServicePrefix
	// "service.cilium.io" + "/global", "/shared"). The ServiceEndpoint reconciler sets them;
	// the test bed reads them to know what the mesh should balance over.
	GlobalAnnotation = "service.cilium.io/global"
	SharedAnnotation = "service.cilium.io/shared"
	// AffinityAnnotation (local, remote, none) says which cluster's backends Cilium prefers.
	AffinityAnnotation = "service.cilium.io/affinity"
	// SyncAnnotation asks Cilium to mirror a global Service's remote endpoints as
	// EndpointSlices (Cilium's annotation.GlobalServiceSyncEndpointSlices).
	SyncAnnotation = "service.cilium.io/global-sync-endpoint-slices"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the mirrored slices
	// (Cilium's utils.EndpointSliceMeshControllerName).
	ManagedBy = "endpointslice-mesh-controller.cilium.io"
	// LabelSourceCluster names the peer a mirrored slice comes from (the MCS API's
	// well-known label, which Cilium sets on the mirrored slices).
	LabelSourceCluster = "multicluster.kubernetes.io/source-cluster"
)

// Selector selects the mirrored EndpointSlices of the Service named service, every peer's.
// The slices carry the Service's own name in kubernetes.io/service-name (Cilium rewrites it
// to <name>-<cluster> only inside its controller).
func Selector(service string) labels.Selector {
	return labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelManagedBy:   ManagedBy,
		discoveryv1.LabelServiceName: service,
	})
}

// Ready is the number of ready endpoints each peer serves, by cluster name.
type Ready map[string]int32

// String lists the counts sorted by cluster, for messages and logs.
func (r Ready) String() string {
	names := make([]string, 0, len(r))
	for c := range r {
		names = append(names, c)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, c := range names {
		parts[i] = fmt.Sprintf("%s=%d", c, r[c])
	}
	return strings.Join(parts, ", ")
}

// CountReady counts the ready endpoints of service per source cluster in slices. It counts
// only slices Cilium mirrored (ManagedBy, with a source cluster) for that Service, skips the
// slices of local (this cluster's own endpoints are not the mesh's to report) and slices being
// deleted, treats a nil Ready condition as ready (the EndpointSlice API's rule), counts an
// endpoint listed in two slices once, and takes the larger of a peer's per-address-type counts.
func CountReady(slices []discoveryv1.EndpointSlice, service types.NamespacedName, local string) Ready {
	type family struct {
		cluster     string
		addressType discoveryv1.AddressType
	}
	seen := map[family]map[string]bool{}
	for i := range slices {
		s := &slices[i]
		cluster := s.Labels[LabelSourceCluster]
		switch {
		case s.Labels[discoveryv1.LabelManagedBy] != ManagedBy,
			s.Labels[discoveryv1.LabelServiceName] != service.Name,
			s.Namespace != service.Namespace,
			cluster == "", cluster == local,
			s.DeletionTimestamp != nil:
			continue
		}
		f := family{cluster, s.AddressType}
		if seen[f] == nil {
			seen[f] = map[string]bool{}
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			seen[f][endpointKey(ep)] = true
		}
	}
	ready := Ready{}
	for f, eps := range seen {
		ready[f.cluster] = max(ready[f.cluster], int32(len(eps)))
	}
	return ready
}

// endpointKey identifies an endpoint within one cluster and address type: its target when it
// has a UID, else its addresses (Cilium's mirrored endpoints are one address each).
func endpointKey(ep discoveryv1.Endpoint) string {
	if ref := ep.TargetRef; ref != nil && ref.UID != "" {
		return "uid/" + string(ref.UID)
	}
	addrs := append([]string(nil), ep.Addresses...)
	sort.Strings(addrs)
	return "addr/" + strings.Join(addrs, ",")
}

// Deficits are the replicas each peer target misses below its base share, as the view shows
// it: base minus ready, for every target but local with a positive difference. A peer with no
// mirrored slice at all counts as no ready endpoint, so callers must read a synced cache, and
// must pass only a view that shows at least one peer target (Split): with none, every peer
// would count as down, and the caller holds instead (placement.HoldFailover). The result is
// what placement.StepFailover observes.
func Deficits(alloc placement.Allocation, ready Ready, local string) placement.Deficits {
	d := placement.Deficits{}
	for _, s := range alloc {
		if s.Cluster == local {
			continue
		}
		if missing := s.Replicas - ready[s.Cluster]; missing > 0 {
			d[s.Cluster] = missing
		}
	}
	return d
}

// Split separates what the view shows of the peers of alloc (every target but local) from the
// sources that are no target. A source that serves ready endpoints for the Service but is not
// a target is almost always a name mismatch: the slices are labelled with Cilium's
// cluster.name, which must be the ClusterMember name; its counts say nothing about any target.
// strangers are those sources with at least one ready endpoint, sorted (a member that is no
// target may export an empty slice: that is no mismatch).
func Split(ready Ready, alloc placement.Allocation, local string) (peers Ready, strangers []string) {
	peers = Ready{}
	// A set of the targets, not alloc.For per source: that was O(C²) per failover reconcile.
	targets := make(map[string]struct{}, len(alloc))
	for _, s := range alloc {
		targets[s.Cluster] = struct{}{}
	}
	for c, n := range ready {
		if _, target := targets[c]; target && c != local {
			peers[c] = n
			continue
		}
		if c != local && n > 0 {
			strangers = append(strangers, c)
		}
	}
	sort.Strings(strangers)
	return peers, strangers
}
