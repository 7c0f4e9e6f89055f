package datapath

import (
	"context"
	"encoding/json"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// What a member's Cilium balances a Service's calls over: the backends its agents hold for the
// Service's ClusterIP, local and those ClusterMesh brought from the peers. A routing probe
// that calls before the mesh has synchronised a peer's backends would judge a view that is
// still filling; the harness waits on this count first.

// serviceEntry is the part of `cilium-dbg service list -o json` read here (Cilium 1.20's
// api/v1/models Service, ServiceSpec, FrontendAddress, BackendAddress).
type serviceEntry struct {
	Spec struct {
		Frontend struct {
			IP   string `json:"ip"`
			Port uint16 `json:"port"`
		} `json:"frontend-address"`
		Backends []struct {
			IP    *string `json:"ip"`
			Port  uint16  `json:"port"`
			State string  `json:"state"`
		} `json:"backend-addresses"`
	} `json:"spec"`
}

// ParseActiveBackends counts, in the JSON of `cilium-dbg service list -o json`, the backends
// of the frontend ip:port that are active (an empty state is active: older agents leave it
// out). The second value says whether the frontend is there at all.
func ParseActiveBackends(data []byte, ip string, port uint16) (int, bool, error) {
	var list []serviceEntry
	if err := json.Unmarshal(data, &list); err != nil {
		return 0, false, fmt.Errorf("read cilium-dbg service list -o json: %w", err)
	}
	n, found := 0, false
	for _, s := range list {
		if s.Spec.Frontend.IP != ip || s.Spec.Frontend.Port != port {
			continue
		}
		found = true
		seen := map[string]bool{}
		for _, b := range s.Spec.Backends {
			if b.IP == nil || (b.State != "" && b.State != "active") {
				continue
			}
			key := fmt.Sprintf("%s:%d", *b.IP, b.Port)
			if !seen[key] {
				seen[key] = true
				n++
			}
		}
	}
	return n, found, nil
}

// ServiceBackends is the smallest number of active backends that any Cilium agent of the
// cluster holds for the ClusterIP frontend of namespace/service on port: every agent must
// have the peers' backends before a call from any node is judged.
func ServiceBackends(ctx context.Context, e *Env, cluster, namespace, service string, port int32) (int, error) {
	m, err := e.Member(cluster)
	if err != nil {
		return 0, err
	}
	cl, err := e.Client(m)
	if err != nil {
		return 0, err
	}
	svc := &corev1.Service{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: service}, svc); err != nil {
		return 0, fmt.Errorf("read Service %s/%s in %s: %w", namespace, service, cluster, err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return 0, fmt.Errorf("Service %s/%s in %s has no ClusterIP", namespace, service, cluster)
	}
	var pods corev1.PodList
	if err := cl.List(ctx, &pods, client.InNamespace(CiliumNamespace), client.MatchingLabels{CiliumAgentPodLabel: CiliumAgentPodLabelV}); err != nil {
		return 0, err
	}
	if len(pods.Items) == 0 {
		return 0, fmt.Errorf("no Cilium agent pods in %s", cluster)
	}
	least := -1
	for _, p := range pods.Items {
		out, err := Exec(ctx, m, CiliumNamespace, p.Name, "cilium-agent", "cilium-dbg", "service", "list", "-o", "json")
		if err != nil {
			return 0, err
		}
		n, found, err := ParseActiveBackends(out, svc.Spec.ClusterIP, uint16(port))
		if err != nil {
			return 0, fmt.Errorf("%s in %s: %w", p.Name, cluster, err)
		}
		if !found {
			return 0, fmt.Errorf("the Cilium agent %s in %s has no frontend %s:%d for Service %s/%s yet", p.Name, cluster, svc.Spec.ClusterIP, port, namespace, service)
		}
		if least < 0 || n < least {
			least = n
		}
	}
	return least, nil
}
