// Package meshmirror stands in, on kwok (the host bed), for Cilium's endpoint-slice
// synchronisation of global Services: kwok clusters have no Cilium, so nothing would mirror a
// peer's endpoints into a cluster, and capacity failover (decision 0006) would see every peer
// as down.
//
// The mirror holds every cluster's admin credentials (the test bed does; the operators still
// read only their own cluster) and does, from outside, what the Cilium 1.20 operator does
// inside each cluster with --clustermesh-enable-endpoint-sync (checked in
// github.com/cilium/cilium pkg/clustermesh/endpointslicesync and operator/watchers/service_sync.go):
//
//   - a source cluster exports a Service that is global (service.cilium.io/global: "true") and
//     not unshared (service.cilium.io/shared, default true for a global Service), with every
//     backend of its own EndpointSlices that is ready or still serving;
//   - a target cluster gets mirrored slices for its own Service of the same namespace and name
//     when that Service is global and annotated service.cilium.io/global-sync-endpoint-slices:
//     "true" (a headless global Service without the annotation syncs too), one set per source
//     cluster, at most 100 endpoints a slice (--clustermesh-max-endpoints-per-slice);
//   - a mirrored slice carries the target Service's labels, then
//     multicluster.kubernetes.io/source-cluster: <source>, kubernetes.io/service-name: <the
//     Service's own name> and endpointslice.kubernetes.io/managed-by:
//     endpointslice-mesh-controller.cilium.io (service.kubernetes.io/headless when the Service
//     has no cluster IP), and a controller owner reference to the target Service;
//   - each backend address is one endpoint of a fake pod "fake-pod-<address>" (no UID) on a
//     node named after the source cluster, ready, serving and not terminating;
//   - a source cluster that cannot be reached keeps its mirrored slices until the cache TTL
//     (clustermesh.cacheTTL) has passed since it was last read; then they are deleted, as
//     Cilium deletes the slices of a cluster service that left its cache. A TTL of 0 keeps them
//     for ever, Cilium's default.
//
// What it does not reproduce: Cilium's generated slice names (these are deterministic,
// <service>-<source>-<family>-<n>; nothing reads them), endpoint hostnames and zones,
// per-port-set slices (every endpoint of a source gets the union of its ports), global
// namespaces, and the agent's datapath. It is a test fixture, not a Cilium.
package meshmirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/netip"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// Cilium's names, as github.com/cilium/cilium@v1.20 spells them. They are written out here
// rather than taken from internal/meshview, so that a test can check that what the operator
// selects and counts (meshview) is what Cilium writes (this package).
const (
	// GlobalAnnotation marks a global Service (Cilium's annotation.GlobalService).
	GlobalAnnotation = "service.cilium.io/global"
	// SharedAnnotation "false" keeps a global Service's backends to its own cluster
	// (annotation.GlobalServiceShared; a global Service is shared by default).
	SharedAnnotation = "service.cilium.io/shared"
	// SyncAnnotation asks for the peers' endpoints as EndpointSlices
	// (annotation.GlobalServiceSyncEndpointSlices).
	SyncAnnotation = "service.cilium.io/global-sync-endpoint-slices"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of mirrored slices
	// (utils.EndpointSliceMeshControllerName).
	ManagedBy = "endpointslice-mesh-controller.cilium.io"
	// LabelSourceCluster names the source cluster (the MCS API's
	// mcsapiv1alpha1.LabelSourceCluster, which service_informer.go puts on the fake Service
	// whose labels the slices copy).
	LabelSourceCluster = "multicluster.kubernetes.io/source-cluster"
	// MaxEndpointsPerSlice is --clustermesh-max-endpoints-per-slice's default.
	MaxEndpointsPerSlice = 100
)

// Cluster is one member the mirror reads from and writes to.
type Cluster struct {
	Name   string
	Client kubernetes.Interface
}

// Options tune a Mirror.
type Options struct {
	// Interval is how often every cluster is read and every mirror brought up to date.
	Interval time.Duration
	// CacheTTL is how long an unreachable cluster's mirrored slices are kept, counted from
	// when it was last read; 0 keeps them for ever (Cilium's default, clustermesh.cacheTTL).
	CacheTTL time.Duration
	// Log receives a line for each change of what the mirror shows; nil discards them.
	Log io.Writer
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// Mirror copies the endpoints of global Services between clusters as Cilium would.
//
// Its shape is a poll loop (wait.UntilWithContext), not informers: every Interval it lists
// each cluster's Services and EndpointSlices and writes the difference. That makes "a cluster
// cannot be reached" an explicit, timed fact — the list failed, and the cache TTL counts from
// the last list that worked — where an informer would hide a stopped API server in its
// reflector's retries and serve its last cache without saying since when. It also makes every
// pass a full resync, so a mirror that missed something (a cluster restarted, a namespace
// deleted under it) is right again one interval later. The cost, a few lists per cluster per
// interval, is nothing at test-bed scale; the latency, up to one interval, is stated in
// docs/testbed.md.
type Mirror struct {
	clusters []Cluster
	opts     Options

	mu      sync.Mutex
	sources map[string]*source
	// shown is what each target last showed of each source's endpoints, for the log.
	shown map[string]int
	// passes counts the completed passes.
	passes int
}

// source is what the mirror last read from one cluster.
type source struct {
	// readAt is when the cluster was last read; zero when never.
	readAt time.Time
	// reachable is whether the last read worked.
	reachable bool
	// revoked is whether its mirrored slices were removed after the cache TTL.
	revoked bool
	// meshName is the name the cluster goes by in the mesh: Cilium's cluster-name in
	// kube-system/cilium-config when the cluster has one, else its test-bed name. Mirrored
	// slices are labelled with it, as Cilium labels them with its own cluster.name.
	meshName string
	services []corev1.Service
	exports  map[types.NamespacedName]Export
	// mirrored are the mirrored slices in this cluster, as a target.
	mirrored []discoveryv1.EndpointSlice
}

// Where Cilium keeps its cluster name (cilium-config's cluster-name, Helm cluster.name): a
// cluster that has it is mirrored under that name, so a test can give a cluster the wrong one.
const (
	ciliumConfigNamespace = "kube-system"
	ciliumConfigName      = "cilium-config"
	ciliumClusterNameKey  = "cluster-name"
)

// Export is a Service as its cluster exports it to the mesh: the backend addresses and the
// ports they serve.
type Export struct {
	addresses []string
	ports     []discoveryv1.EndpointPort
}

// New returns a mirror over clusters.
func New(clusters []Cluster, opts Options) (*Mirror, error) {
	if len(clusters) < 2 {
		return nil, fmt.Errorf("the mesh mirror needs at least two clusters, got %d", len(clusters))
	}
	if opts.Interval <= 0 {
		opts.Interval = time.Second
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	return &Mirror{clusters: clusters, opts: opts, sources: map[string]*source{}, shown: map[string]int{}}, nil
}

// Run mirrors every Interval until ctx ends. A pass that fails in part (a cluster down) is
// logged and the next pass tries again.
func (m *Mirror) Run(ctx context.Context) {
	names := make([]string, len(m.clusters))
	for i, c := range m.clusters {
		names[i] = c.Name
	}
	m.logf("mesh mirror: standing in for Cilium's endpoint-slice synchronisation between %s, every %s, cache TTL %s",
		strings.Join(names, ", "), m.opts.Interval, ttlString(m.opts.CacheTTL))
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := m.Sync(ctx); err != nil && ctx.Err() == nil {
			m.logf("mesh mirror: %v", err)
		}
	}, m.opts.Interval)
}

// Passes is how many passes have completed.
func (m *Mirror) Passes() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.passes
}

// Sync reads every cluster once and brings every reachable cluster's mirrored slices up to
// date. The error joins what failed; what could be done was done.
func (m *Mirror) Sync(ctx context.Context) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	now := m.opts.Now()
	for _, c := range m.clusters {
		if err := m.read(ctx, c, now); err != nil {
			errs = append(errs, err)
		}
	}
	for _, c := range m.clusters {
		s := m.sources[c.Name]
		if s == nil || s.reachable || s.revoked || s.readAt.IsZero() {
			continue
		}
		if m.opts.CacheTTL > 0 && now.Sub(s.readAt) >= m.opts.CacheTTL {
			s.revoked = true
			m.logf("mesh mirror: %s unreachable for the cache TTL %s (last read %s ago): removing its mirrored endpoints from the others",
				c.Name, m.opts.CacheTTL, now.Sub(s.readAt).Round(time.Millisecond))
		}
	}
	for _, c := range m.clusters {
		if s := m.sources[c.Name]; s != nil && s.reachable {
			if err := m.write(ctx, c); err != nil {
				errs = append(errs, fmt.Errorf("write to %s: %w", c.Name, err))
			}
		}
	}
	m.passes++
	return errors.Join(errs...)
}

// read lists a cluster's Services and EndpointSlices and records what it exports and what is
// mirrored into it. A failure leaves the last read in place, marked unreachable.
func (m *Mirror) read(ctx context.Context, c Cluster, now time.Time) error {
	s := m.sources[c.Name]
	if s == nil {
		s = &source{}
		m.sources[c.Name] = s
	}
	svcs, err := c.Client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	var eps *discoveryv1.EndpointSliceList
	if err == nil {
		eps, err = c.Client.DiscoveryV1().EndpointSlices(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	}
	meshName := c.Name
	if err == nil {
		var cm *corev1.ConfigMap
		cm, err = c.Client.CoreV1().ConfigMaps(ciliumConfigNamespace).Get(ctx, ciliumConfigName, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			err = nil
		case err == nil && cm.Data[ciliumClusterNameKey] != "":
			meshName = cm.Data[ciliumClusterNameKey]
		}
	}
	if err != nil {
		if s.reachable {
			m.logf("mesh mirror: cannot read %s (%v): keeping its mirrored endpoints until the cache TTL %s", c.Name, err, ttlString(m.opts.CacheTTL))
		}
		s.reachable = false
		return fmt.Errorf("read %s: %w", c.Name, err)
	}
	if !s.reachable && !s.readAt.IsZero() {
		m.logf("mesh mirror: %s can be read again (unreachable for %s)", c.Name, now.Sub(s.readAt).Round(time.Millisecond))
	}
	if s.meshName != "" && s.meshName != meshName {
		m.logf("mesh mirror: %s now goes by %q in the mesh (cilium-config cluster-name), was %q", c.Name, meshName, s.meshName)
	}
	s.meshName = meshName
	s.readAt, s.reachable, s.revoked = now, true, false
	s.services = svcs.Items
	s.exports = Exports(svcs.Items, eps.Items)
	s.mirrored = s.mirrored[:0]
	for _, sl := range eps.Items {
		if sl.Labels[discoveryv1.LabelManagedBy] == ManagedBy {
			s.mirrored = append(s.mirrored, sl)
		}
	}
	return nil
}

// write brings the mirrored slices of target up to date with what every other cluster
// exports, as far as the mirror still holds it.
func (m *Mirror) write(ctx context.Context, target Cluster) error {
	t := m.sources[target.Name]
	peers := map[string]map[types.NamespacedName]Export{}
	for _, c := range m.clusters {
		if s := m.sources[c.Name]; c.Name != target.Name && s != nil && !s.readAt.IsZero() && !s.revoked {
			peers[s.meshName] = s.exports
		}
	}
	desired := Desired(t.services, peers)
	have := map[types.NamespacedName]discoveryv1.EndpointSlice{}
	for _, sl := range t.mirrored {
		have[types.NamespacedName{Namespace: sl.Namespace, Name: sl.Name}] = sl
	}
	var errs []error
	api := target.Client.DiscoveryV1()
	for _, want := range desired {
		key := types.NamespacedName{Namespace: want.Namespace, Name: want.Name}
		cur, ok := have[key]
		delete(have, key)
		switch {
		case !ok:
			// A namespace being deleted refuses new objects; the Service and its slices go with it.
			if _, err := api.EndpointSlices(want.Namespace).Create(ctx, &want, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) &&
				!apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
				errs = append(errs, fmt.Errorf("create EndpointSlice %s: %w", key, err))
			}
		case !sameSlice(&cur, &want):
			upd := cur.DeepCopy()
			upd.Labels, upd.OwnerReferences, upd.Endpoints, upd.Ports = want.Labels, want.OwnerReferences, want.Endpoints, want.Ports
			if _, err := api.EndpointSlices(want.Namespace).Update(ctx, upd, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
				errs = append(errs, fmt.Errorf("update EndpointSlice %s: %w", key, err))
			}
		}
	}
	for key, sl := range have {
		err := api.EndpointSlices(key.Namespace).Delete(ctx, key.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &sl.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, fmt.Errorf("delete EndpointSlice %s: %w", key, err))
		}
	}
	m.logChanges(target.Name, desired)
	return errors.Join(errs...)
}

// logChanges logs, per Service and source, how many endpoints the target now shows, when that
// changed since the last pass.
func (m *Mirror) logChanges(target string, desired []discoveryv1.EndpointSlice) {
	now := map[string]int{}
	for _, sl := range desired {
		key := fmt.Sprintf("%s ← %s %s/%s", target, sl.Labels[LabelSourceCluster], sl.Namespace, sl.Labels[discoveryv1.LabelServiceName])
		now[key] += len(sl.Endpoints)
	}
	prefix := target + " ← "
	for _, key := range slices.Sorted(maps.Keys(m.shown)) {
		if _, ok := now[key]; !ok && strings.HasPrefix(key, prefix) {
			m.logf("mesh mirror: %s: no mirrored slice", key)
			delete(m.shown, key)
		}
	}
	for _, key := range slices.Sorted(maps.Keys(now)) {
		if old, ok := m.shown[key]; !ok || old != now[key] {
			m.logf("mesh mirror: %s: %d endpoints", key, now[key])
			m.shown[key] = now[key]
		}
	}
}

func (m *Mirror) logf(format string, args ...any) {
	fmt.Fprintf(m.opts.Log, "%s %s\n", m.opts.Now().Format("15:04:05.000"), fmt.Sprintf(format, args...))
}

func ttlString(ttl time.Duration) string {
	if ttl == 0 {
		return "0s (never revoked)"
	}
	return ttl.String()
}

// Exports are the Services a cluster exports to the mesh, with their backends: what Cilium's
// service sync (operator/watchers/service_sync.go) writes to the cluster's kvstore. A Service
// is exported when it is global and shared; its backends are the addresses of its own
// EndpointSlices (not the mirrored ones) whose endpoint is ready or serving (an unset
// condition counts as the EndpointSlice API says: ready when unset, serving like ready).
func Exports(services []corev1.Service, endpointSlices []discoveryv1.EndpointSlice) map[types.NamespacedName]Export {
	out := map[types.NamespacedName]Export{}
	for _, svc := range services {
		if !isTrue(svc.Annotations, GlobalAnnotation) || strings.EqualFold(svc.Annotations[SharedAnnotation], "false") {
			continue
		}
		key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
		addrs := map[string]bool{}
		ports := map[string]discoveryv1.EndpointPort{}
		for _, sl := range endpointSlices {
			if sl.Namespace != svc.Namespace || sl.Labels[discoveryv1.LabelServiceName] != svc.Name || sl.Labels[discoveryv1.LabelManagedBy] == ManagedBy {
				continue
			}
			if sl.AddressType != discoveryv1.AddressTypeIPv4 && sl.AddressType != discoveryv1.AddressTypeIPv6 {
				continue
			}
			var found bool
			for _, ep := range sl.Endpoints {
				ready := ep.Conditions.Ready == nil || *ep.Conditions.Ready
				serving := ready
				if ep.Conditions.Serving != nil {
					serving = *ep.Conditions.Serving
				}
				if !ready && !serving {
					continue
				}
				for _, a := range ep.Addresses {
					if ip, err := netip.ParseAddr(a); err == nil {
						addrs[ip.String()] = true
						found = true
					}
				}
			}
			if found {
				for _, p := range sl.Ports {
					ports[portKey(p)] = normalPort(p)
				}
			}
		}
		e := Export{addresses: slices.Sorted(maps.Keys(addrs))}
		for _, k := range slices.Sorted(maps.Keys(ports)) {
			e.ports = append(e.ports, ports[k])
		}
		out[key] = e
	}
	return out
}

// Syncs reports whether Cilium mirrors the peers' endpoints of a local Service: global, and
// annotated for endpoint-slice sync, or headless without the annotation
// (endpointslicesync/service_informer.go, doesServiceSyncEndpointSlice).
func Syncs(svc *corev1.Service) bool {
	if !isTrue(svc.Annotations, GlobalAnnotation) {
		return false
	}
	v, ok := svc.Annotations[SyncAnnotation]
	if !ok {
		return svc.Spec.ClusterIP == corev1.ClusterIPNone
	}
	return strings.EqualFold(v, "true")
}

// Desired are the mirrored slices a target cluster should hold: for each of its own Services
// that syncs, one set per peer that exports a Service of the same namespace and name. peers
// maps each peer's name to its exports.
func Desired(targetServices []corev1.Service, peers map[string]map[types.NamespacedName]Export) []discoveryv1.EndpointSlice {
	var out []discoveryv1.EndpointSlice
	for i := range targetServices {
		svc := &targetServices[i]
		if !Syncs(svc) {
			continue
		}
		key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
		for _, peer := range slices.Sorted(maps.Keys(peers)) {
			if e, ok := peers[peer][key]; ok {
				out = append(out, slicesFor(svc, peer, e)...)
			}
		}
	}
	return out
}

// slicesFor are the mirrored slices of one peer's export of svc.
func slicesFor(svc *corev1.Service, peer string, e Export) []discoveryv1.EndpointSlice {
	byFamily := map[discoveryv1.AddressType][]string{}
	for _, a := range e.addresses {
		family := discoveryv1.AddressTypeIPv4
		if ip, _ := netip.ParseAddr(a); ip.Is6() {
			family = discoveryv1.AddressTypeIPv6
		}
		byFamily[family] = append(byFamily[family], a)
	}
	if len(byFamily) == 0 {
		// The EndpointSlice controller keeps one empty placeholder slice for a Service without
		// endpoints: a reachable peer with nothing ready shows as 0, not as absent.
		byFamily[discoveryv1.AddressTypeIPv4] = nil
	}
	var out []discoveryv1.EndpointSlice
	for _, family := range slices.Sorted(maps.Keys(byFamily)) {
		addrs := byFamily[family]
		for n := 0; n == 0 || n*MaxEndpointsPerSlice < len(addrs); n++ {
			chunk := addrs[n*MaxEndpointsPerSlice : min(len(addrs), (n+1)*MaxEndpointsPerSlice)]
			sl := discoveryv1.EndpointSlice{
				ObjectMeta: metav1.ObjectMeta{
					Name:      fmt.Sprintf("%s-%s-%s-%d", svc.Name, peer, strings.ToLower(string(family)), n),
					Namespace: svc.Namespace,
					Labels:    sliceLabels(svc, peer),
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
						Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
					}},
				},
				AddressType: family,
				Ports:       slices.Clone(e.ports),
				Endpoints:   []discoveryv1.Endpoint{},
			}
			for _, a := range chunk {
				sl.Endpoints = append(sl.Endpoints, discoveryv1.Endpoint{
					Addresses:  []string{a},
					Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false)},
					NodeName:   ptr.To(peer),
					TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: svc.Namespace, Name: "fake-pod-" + a},
				})
			}
			out = append(out, sl)
		}
	}
	return out
}

// sliceLabels are the labels of a mirrored slice: the target Service's own labels but the
// EndpointSlice controller's reserved ones, the source cluster, the headless marker when the
// Service has no cluster IP, the Service's own name and the mesh controller as manager.
func sliceLabels(svc *corev1.Service, peer string) map[string]string {
	l := map[string]string{}
	for k, v := range svc.Labels {
		switch k {
		case discoveryv1.LabelServiceName, discoveryv1.LabelManagedBy, corev1.IsHeadlessService:
			continue
		}
		l[k] = v
	}
	l[LabelSourceCluster] = peer
	if svc.Spec.ClusterIP == "" || svc.Spec.ClusterIP == corev1.ClusterIPNone {
		l[corev1.IsHeadlessService] = ""
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = ManagedBy
	return l
}

// sameSlice compares what the mirror writes of a slice.
func sameSlice(a, b *discoveryv1.EndpointSlice) bool {
	return a.AddressType == b.AddressType &&
		reflect.DeepEqual(a.Labels, b.Labels) &&
		reflect.DeepEqual(a.OwnerReferences, b.OwnerReferences) &&
		reflect.DeepEqual(nonNil(a.Endpoints), nonNil(b.Endpoints)) &&
		reflect.DeepEqual(nonNil(a.Ports), nonNil(b.Ports))
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func portKey(p discoveryv1.EndpointPort) string {
	return fmt.Sprintf("%s/%d/%s", ptr.Deref(p.Name, ""), ptr.Deref(p.Port, 0), ptr.Deref(p.Protocol, corev1.ProtocolTCP))
}

// normalPort is a port as the mirror writes it: name, port and protocol (TCP when unset).
func normalPort(p discoveryv1.EndpointPort) discoveryv1.EndpointPort {
	return discoveryv1.EndpointPort{
		Name:     ptr.To(ptr.Deref(p.Name, "")),
		Port:     p.Port,
		Protocol: ptr.To(ptr.Deref(p.Protocol, corev1.ProtocolTCP)),
	}
}

func isTrue(annotations map[string]string, key string) bool {
	return strings.EqualFold(annotations[key], "true")
}

// Status is what the mirror last did, for its health endpoint and the test bed's status.
type Status struct {
	Passes   int                      `json:"passes"`
	Interval string                   `json:"interval"`
	CacheTTL string                   `json:"cacheTTL"`
	Clusters map[string]ClusterStatus `json:"clusters"`
}

// ClusterStatus is what the mirror knows of one cluster.
type ClusterStatus struct {
	Reachable bool      `json:"reachable"`
	ReadAt    time.Time `json:"readAt,omitzero"`
	// Revoked: unreachable for longer than the cache TTL; its endpoints are no longer mirrored.
	Revoked bool `json:"revoked,omitempty"`
	// Exports is how many global Services it exports.
	Exports int `json:"exports"`
}

// Status reports what the mirror last did.
func (m *Mirror) Status() Status {
	m.mu.Lock()
	defer m.mu.Unlock()
	st := Status{Passes: m.passes, Interval: m.opts.Interval.String(), CacheTTL: m.opts.CacheTTL.String(), Clusters: map[string]ClusterStatus{}}
	for _, c := range m.clusters {
		cs := ClusterStatus{}
		if s := m.sources[c.Name]; s != nil {
			cs = ClusterStatus{Reachable: s.reachable, ReadAt: s.readAt, Revoked: s.revoked, Exports: len(s.exports)}
		}
		st.Clusters[c.Name] = cs
	}
	return st
}
