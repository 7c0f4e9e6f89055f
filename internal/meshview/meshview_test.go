package meshview

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/polykube/polykube/placement"
)

var web = types.NamespacedName{Namespace: "demo", Name: "web"}

// mirrored is a slice as Cilium's endpoint-slice synchronisation writes it for a peer.
func mirrored(cluster string, family discoveryv1.AddressType, eps ...discoveryv1.Endpoint) discoveryv1.EndpointSlice {
	return discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: web.Namespace,
			Name:      fmt.Sprintf("web-%s-%s-%d", cluster, family, len(eps)),
			Labels: map[string]string{
				discoveryv1.LabelManagedBy:   ManagedBy,
				discoveryv1.LabelServiceName: web.Name,
				LabelSourceCluster:           cluster,
			},
		},
		AddressType: family,
		Endpoints:   eps,
	}
}

func ep(addr string, ready *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ready},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: web.Namespace, Name: "fake-pod-" + addr},
	}
}

func TestCountReady(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	local := mirrored("alpha", v4, ep("10.1.0.1", nil))
	local.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	delete(local.Labels, LabelSourceCluster)
	otherService := mirrored("beta", v4, ep("10.2.0.9", nil))
	otherService.Labels[discoveryv1.LabelServiceName] = "api"
	otherNamespace := mirrored("beta", v4, ep("10.2.0.8", nil))
	otherNamespace.Namespace = "prod"
	deleting := mirrored("gamma", v4, ep("10.3.0.9", nil))
	deleting.DeletionTimestamp = &metav1.Time{}
	unlabelled := mirrored("gamma", v4, ep("10.3.0.8", nil))
	delete(unlabelled.Labels, LabelSourceCluster)
	mcsDerived := mirrored("gamma", v4, ep("10.3.0.7", nil))
	mcsDerived.Labels[discoveryv1.LabelManagedBy] = "mcs-api-controller.cilium.io"

	tests := []struct {
		name   string
		slices []discoveryv1.EndpointSlice
		want   string
	}{
		{"nothing mirrored", nil, ""},
		{
			"nil ready counts as ready, false does not",
			[]discoveryv1.EndpointSlice{mirrored("beta", v4, ep("10.2.0.1", nil), ep("10.2.0.2", ptr.To(true)), ep("10.2.0.3", ptr.To(false)))},
			"beta=2",
		},
		{
			"a peer's endpoints over several slices add up, one listed twice counts once",
			[]discoveryv1.EndpointSlice{
				mirrored("beta", v4, ep("10.2.0.1", nil), ep("10.2.0.2", nil)),
				mirrored("beta", v4, ep("10.2.0.2", nil), ep("10.2.0.3", nil), ep("10.2.0.4", nil)),
			},
			"beta=4",
		},
		{
			"dual stack: the larger family, not the sum",
			[]discoveryv1.EndpointSlice{
				mirrored("beta", v4, ep("10.2.0.1", nil), ep("10.2.0.2", nil)),
				mirrored("beta", v6, ep("fd00::1", nil), ep("fd00::2", nil), ep("fd00::3", ptr.To(false))),
			},
			"beta=2",
		},
		{
			"peers apart; the local cluster's own slices, if mirrored back, are skipped",
			[]discoveryv1.EndpointSlice{
				mirrored("beta", v4, ep("10.2.0.1", nil)),
				mirrored("gamma", v4, ep("10.3.0.1", nil), ep("10.3.0.2", nil)),
				mirrored("alpha", v4, ep("10.1.0.1", nil)),
			},
			"beta=1, gamma=2",
		},
		{
			"a peer whose endpoints are all not ready is listed with 0",
			[]discoveryv1.EndpointSlice{mirrored("beta", v4, ep("10.2.0.1", ptr.To(false)))},
			"beta=0",
		},
		{
			"local, other Services and namespaces, deleting, unlabelled and other managers are ignored",
			[]discoveryv1.EndpointSlice{local, otherService, otherNamespace, deleting, unlabelled, mcsDerived},
			"",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := CountReady(tt.slices, web, "alpha").String(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

func TestCountReady_UIDTargetsCountOnceAcrossAddresses(t *testing.T) {
	a, b := ep("10.2.0.1", nil), ep("10.2.0.2", nil)
	a.TargetRef.UID, b.TargetRef.UID = "pod-1", "pod-1"
	got := CountReady([]discoveryv1.EndpointSlice{mirrored("beta", discoveryv1.AddressTypeIPv4, a, b)}, web, "alpha")
	if got["beta"] != 1 {
		t.Errorf("one pod behind two endpoints counted %d times", got["beta"])
	}
}

func TestSelector(t *testing.T) {
	s := mirrored("beta", discoveryv1.AddressTypeIPv4)
	if !Selector("web").Matches(labels.Set(s.Labels)) {
		t.Errorf("Selector(web) does not match a mirrored slice: %s", Selector("web"))
	}
	if Selector("api").Matches(labels.Set(s.Labels)) {
		t.Error("Selector(api) matches web's slice")
	}
	s.Labels[discoveryv1.LabelManagedBy] = "endpointslice-controller.k8s.io"
	if Selector("web").Matches(labels.Set(s.Labels)) {
		t.Error("Selector matches a local slice")
	}
}

func TestDeficits(t *testing.T) {
	alloc := placement.Allocation{{Cluster: "alpha", Replicas: 3}, {Cluster: "beta", Replicas: 3}, {Cluster: "gamma", Replicas: 3}, {Cluster: "delta", Replicas: 0}}
	tests := []struct {
		name  string
		ready Ready
		want  string
	}{
		{"every peer at its share", Ready{"beta": 3, "gamma": 3}, "map[]"},
		{"a surging peer has no deficit", Ready{"beta": 5, "gamma": 3}, "map[]"},
		{"a lost node pool is a partial deficit", Ready{"beta": 1, "gamma": 3}, "map[beta:2]"},
		{"a peer with no mirrored slices misses its whole share", Ready{"gamma": 3}, "map[beta:3]"},
		{"the local cluster is not judged by the mesh", Ready{}, "map[beta:3 gamma:3]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := fmt.Sprint(Deficits(alloc, tt.ready, "alpha")); got != tt.want {
				t.Errorf("got %s, want %s", got, tt.want)
			}
		})
	}
}

// TestView_EndToEnd goes from mirrored slices to a survivor's replicas: gamma's slices are
// gone (Cilium's cache TTL expired), so alpha, seeing it for detectAfter, absorbs its share.
func TestView_EndToEnd(t *testing.T) {
	spec := placement.Spec{Key: "demo/web", Strategy: placement.MultiCloudWeighted, Total: ptr.To[int32](9), Targets: []placement.Target{
		{Cluster: "alpha", Weight: ptr.To[int32](1)}, {Cluster: "beta", Weight: ptr.To[int32](1)}, {Cluster: "gamma", Weight: ptr.To[int32](1)},
	}}
	alloc, err := placement.Allocate(spec)
	if err != nil {
		t.Fatal(err)
	}
	slices := []discoveryv1.EndpointSlice{mirrored("beta", discoveryv1.AddressTypeIPv4, ep("10.2.0.1", nil), ep("10.2.0.2", nil), ep("10.2.0.3", nil))}
	observed := Deficits(alloc, CountReady(slices, web, "alpha"), "alpha")
	f, err := placement.FailoverFor(spec, "alpha", observed, placement.DefaultMaxSurge)
	if err != nil {
		t.Fatal(err)
	}
	if f.Base != 3 || f.Replicas <= 3 || f.Replicas > 6 || fmt.Sprint(f.Absorbs) != "[gamma]" {
		t.Errorf("alpha: %+v, want base 3, up to 6 with gamma absorbed", f)
	}
}

func TestSplit(t *testing.T) {
	alloc := placement.Allocation{{Cluster: "alpha", Replicas: 3}, {Cluster: "beta", Replicas: 3}, {Cluster: "gamma", Replicas: 0}}
	tests := []struct {
		name           string
		ready          Ready
		peers, strange string
	}{
		{"every source a target", Ready{"beta": 3, "gamma": 0}, "beta=3, gamma=0", "[]"},
		{"a misnamed peer is no target", Ready{"kind-beta": 3}, "", "[kind-beta]"},
		{"a target and a stranger", Ready{"beta": 1, "kind-gamma": 2, "delta": 1}, "beta=1", "[delta kind-gamma]"},
		{"an empty slice of a member that is no target is no mismatch", Ready{"beta": 3, "delta": 0}, "beta=3", "[]"},
		{"the local cluster is neither", Ready{"alpha": 3}, "", "[]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			peers, strangers := Split(tt.ready, alloc, "alpha")
			if peers.String() != tt.peers || fmt.Sprint(strangers) != tt.strange {
				t.Errorf("got %v %v, want %s %s", peers, strangers, tt.peers, tt.strange)
			}
		})
	}
}
