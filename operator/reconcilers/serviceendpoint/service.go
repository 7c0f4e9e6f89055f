package serviceendpoint

import (
	"fmt"
	"maps"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/placement"
)

// Cilium ClusterMesh global-service annotations (Cilium's pkg/annotation: ServicePrefix
// "service.cilium.io" + "/global", "/shared", "/affinity").
const (
	GlobalAnnotation   = meshview.GlobalAnnotation
	SharedAnnotation   = meshview.SharedAnnotation
	AffinityAnnotation = meshview.AffinityAnnotation
)

// Settings are the Cilium annotation values a ServiceEndpoint asks for, with the API defaults
// applied (global and shared true, affinity none).
type Settings struct {
	Global   bool
	Shared   bool
	Affinity string
}

// SettingsOf returns the spec's settings with defaults for unset fields.
func SettingsOf(spec polykubev1alpha1.ServiceEndpointSpec) Settings {
	s := Settings{Global: true, Shared: true, Affinity: polykubev1alpha1.AffinityNone}
	if spec.Global != nil {
		s.Global = *spec.Global
	}
	if spec.Shared != nil {
		s.Shared = *spec.Shared
	}
	if spec.Affinity != "" {
		s.Affinity = spec.Affinity
	}
	return s
}

// Annotations are the Service annotations for the settings. Affinity none is left out: in
// Cilium 1.20 an absent service.cilium.io/affinity and "none" are the same thing
// (github.com/cilium/cilium@v1.20.2 pkg/annotation/clustermesh.go, GetAnnotationServiceAffinity
// returns ServiceAffinityNone for both; pkg/clustermesh/selectbackends.go then selects every
// active backend, local and remote, alike). Leaving Cilium's default unannotated keeps the
// Service free of a value that older Cilium releases mishandled (cilium/cilium issue 46623:
// "none" black-holed traffic when no local endpoint existed, fixed by PR 46635).
func (s Settings) Annotations() map[string]string {
	a := map[string]string{
		GlobalAnnotation: strconv.FormatBool(s.Global),
		SharedAnnotation: strconv.FormatBool(s.Shared),
	}
	if s.Affinity != polykubev1alpha1.AffinityNone {
		a[AffinityAnnotation] = s.Affinity
	}
	return a
}

// managedAnnotations are the annotations the reconciler owns on its Services: one the desired
// Service lacks is removed (an affinity set back to none, or "none" written by an older operator).
var managedAnnotations = []string{GlobalAnnotation, SharedAnnotation, AffinityAnnotation, meshview.SyncAnnotation}

// SyncEndpointSlices asks Cilium to mirror the peers' endpoints of the Service as EndpointSlices
// in this cluster (meshview.SyncAnnotation): the signal of the Workload's capacity failover.
// It is set only for a global Service whose Workload has spec.distribution.failover, not for
// every global Service: with Cilium's endpoint-slice synchronisation on, each annotated Service
// costs every cluster one set of mirrored slices per peer, which nothing else here reads.
// Without that Cilium option the annotation does nothing.
func SyncEndpointSlices(svc *corev1.Service) {
	if svc.Annotations == nil {
		svc.Annotations = map[string]string{}
	}
	svc.Annotations[meshview.SyncAnnotation] = "true"
}

// String is the short form used in condition messages.
func (s Settings) String() string {
	return fmt.Sprintf("global=%t, shared=%t, affinity=%s", s.Global, s.Shared, s.Affinity)
}

// DesiredService is the ClusterIP Service of the ServiceEndpoint in cluster: same name and
// namespace, selecting the pods of the referenced Workload, annotated for ClusterMesh. The
// caller adds the owner reference.
func DesiredService(se *polykubev1alpha1.ServiceEndpoint, cluster string) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name:      se.Name,
			Namespace: se.Namespace,
			Labels: map[string]string{
				polykubev1alpha1.ManagedByLabel:           polykubev1alpha1.ManagedByValue,
				polykubev1alpha1.ServiceEndpointNameLabel: se.Name,
				polykubev1alpha1.ClusterLabel:             cluster,
			},
			Annotations: SettingsOf(se.Spec).Annotations(),
		},
		Spec: corev1.ServiceSpec{
			Type:     corev1.ServiceTypeClusterIP,
			Selector: placement.PodSelector(se.Spec.WorkloadRef.Name),
			Ports:    placement.ServicePorts(se.Spec.Ports),
		},
	}
	return svc
}

// Reconciled returns existing changed to match desired in the fields the operator owns, and
// whether anything changed. Owned fields: its labels and annotations (others are kept), the
// type, the selector and the ports. Fields the API server assigns (clusterIP, ipFamilies) and
// labels or annotations others add are left alone.
func Reconciled(existing, desired *corev1.Service) (*corev1.Service, bool) {
	out := existing.DeepCopy()
	changed := false
	if !hasAll(out.Labels, desired.Labels) {
		out.Labels = merged(out.Labels, desired.Labels)
		changed = true
	}
	if !hasAll(out.Annotations, desired.Annotations) {
		out.Annotations = merged(out.Annotations, desired.Annotations)
		changed = true
	}
	for _, k := range managedAnnotations {
		if _, want := desired.Annotations[k]; !want {
			if _, have := out.Annotations[k]; have {
				delete(out.Annotations, k)
				changed = true
			}
		}
	}
	if out.Spec.Type != desired.Spec.Type {
		out.Spec.Type = desired.Spec.Type
		changed = true
	}
	if !maps.Equal(out.Spec.Selector, desired.Spec.Selector) {
		out.Spec.Selector = maps.Clone(desired.Spec.Selector)
		changed = true
	}
	if !portsEqual(out.Spec.Ports, desired.Spec.Ports) {
		out.Spec.Ports = append([]corev1.ServicePort(nil), desired.Spec.Ports...)
		changed = true
	}
	return out, changed
}

// portsEqual compares ports in order on every field a ClusterIP port of ours sets; a nodePort
// or appProtocol someone added counts as a difference.
func portsEqual(a, b []corev1.ServicePort) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Name != y.Name || x.Protocol != y.Protocol || x.Port != y.Port || x.TargetPort != y.TargetPort ||
			x.NodePort != y.NodePort || !equalPtr(x.AppProtocol, y.AppProtocol) {
			return false
		}
	}
	return true
}

func equalPtr(a, b *string) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func hasAll(have, want map[string]string) bool {
	for k, v := range want {
		if got, ok := have[k]; !ok || got != v {
			return false
		}
	}
	return true
}

func merged(base, overlay map[string]string) map[string]string {
	out := maps.Clone(base)
	if out == nil {
		out = map[string]string{}
	}
	maps.Copy(out, overlay)
	return out
}

// DescribeOwner says who a Service that this ServiceEndpoint did not create belongs to, for the
// Conflict message.
// svc may be a Service or the metadata of one (operator/internal/unmanaged).
func DescribeOwner(svc metav1.Object) string {
	if ref := metav1.GetControllerOf(svc); ref != nil {
		if ref.Kind == "Workload" && svc.GetLabels()[polykubev1alpha1.ManagedByLabel] == polykubev1alpha1.ManagedByValue {
			return fmt.Sprintf("it is controlled by Workload %q, whose spec.ports create a Service of the same name", ref.Name)
		}
		return fmt.Sprintf("it is controlled by %s %q", ref.Kind, ref.Name)
	}
	if by := svc.GetLabels()[polykubev1alpha1.ManagedByLabel]; by != "" {
		return fmt.Sprintf("it is labelled %s=%s and has no controller", polykubev1alpha1.ManagedByLabel, by)
	}
	return "it has no controller"
}

// CountReadyEndpoints counts the distinct ready endpoints of this cluster in the EndpointSlices
// of one Service. An endpoint whose ready condition is unset counts as ready, as the
// EndpointSlice API asks consumers to do. An endpoint listed in several slices (one per address
// family) counts once. Slices Cilium mirrors from other clusters are skipped.
func CountReadyEndpoints(slices []discoveryv1.EndpointSlice) int32 {
	seen := map[string]bool{}
	for _, s := range slices {
		// Slices Cilium mirrors from other clusters: their endpoints run elsewhere.
		if s.Labels[discoveryv1.LabelManagedBy] == meshview.ManagedBy {
			continue
		}
		for _, ep := range s.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			seen[endpointKey(s, ep)] = true
		}
	}
	return int32(len(seen))
}

// endpointKey identifies the backend behind an endpoint: its target (a Pod) when known, else
// its addresses.
func endpointKey(s discoveryv1.EndpointSlice, ep discoveryv1.Endpoint) string {
	if ref := ep.TargetRef; ref != nil {
		if ref.UID != "" {
			return "uid/" + string(ref.UID)
		}
		if ref.Name != "" {
			return "ref/" + ref.Kind + "/" + ref.Namespace + "/" + ref.Name
		}
	}
	return fmt.Sprintf("addr/%s/%v", s.AddressType, ep.Addresses)
}
