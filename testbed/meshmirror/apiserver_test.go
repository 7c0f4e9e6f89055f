package meshmirror

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/polykube/polykube/internal/meshview"
	"github.com/polykube/polykube/internal/testenv"
)

// Against two real API servers: the slices the mirror writes pass the API server's validation
// (fake-pod names with IPv6 addresses, node names, owner references), a pass over an unchanged
// fleet writes nothing (the API server's defaults do not make every pass an update), and a
// stopped API server's slices go after the TTL. envtest runs no controllers, so the test
// writes alpha's local slices as kube-controller-manager would.
func TestMirror_RealAPIServers(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var clusters []Cluster
	envs := map[string]*testenv.Env{}
	clients := map[string]kubernetes.Interface{}
	for _, name := range []string{"alpha", "beta"} {
		env, err := testenv.Start(ctx, testenv.Options{})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Stop() })
		cfg := *env.Config
		cfg.Timeout = requestTimeout
		cs, err := kubernetes.NewForConfig(&cfg)
		if err != nil {
			t.Fatal(err)
		}
		envs[name], clients[name] = env, cs
		clusters = append(clusters, Cluster{Name: name, Client: cs})
		if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		svc := service("web", syncing)
		svc.UID, svc.Spec.ClusterIP = "", ""
		if _, err := cs.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	v4 := local("web", "web-abcde", ep("10.241.0.1", "a1", nil, nil, nil), ep("10.241.0.2", "a2", ptr.To(true), nil, nil))
	v6 := local("web", "web-fghij", ep("fd00:241::1", "a3", nil, nil, nil))
	v6.AddressType = discoveryv1.AddressTypeIPv6
	for _, sl := range []*discoveryv1.EndpointSlice{v4, v6} {
		if _, err := clients["alpha"].DiscoveryV1().EndpointSlices(ns).Create(ctx, sl, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	now := time.Now()
	var log strings.Builder
	m, err := New(clusters, Options{CacheTTL: 5 * time.Second, Log: &log, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatalf("first pass: %v\n%s", err, log.String())
	}
	view := func() meshview.Ready {
		list, err := clients["beta"].DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: meshview.Selector("web").String()})
		if err != nil {
			t.Fatal(err)
		}
		return meshview.CountReady(list.Items, types.NamespacedName{Namespace: ns, Name: "web"}, "beta")
	}
	if got := view().String(); got != "alpha=2" {
		t.Errorf("beta sees %q, want alpha=2 (IPv4 2, IPv6 1: the larger family)", got)
	}
	if got := (func() string {
		list, _ := clients["alpha"].DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{LabelSelector: meshview.Selector("web").String()})
		return meshview.CountReady(list.Items, types.NamespacedName{Namespace: ns, Name: "web"}, "alpha").String()
	})(); got != "beta=0" {
		t.Errorf("alpha sees %q, want beta=0 (beta has no endpoints: a placeholder slice)", got)
	}

	list, err := clients["beta"].DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	versions := map[string]string{}
	for _, sl := range list.Items {
		versions[sl.Name] = sl.ResourceVersion
	}
	if err := m.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	list, _ = clients["beta"].DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	for _, sl := range list.Items {
		if versions[sl.Name] != sl.ResourceVersion {
			t.Errorf("a pass over an unchanged fleet updated %s: the comparison misses an API server default", sl.Name)
		}
	}

	if err := envs["alpha"].Stop(); err != nil {
		t.Fatal(err)
	}
	now = now.Add(4 * time.Second)
	if err := m.Sync(ctx); err == nil {
		t.Error("a pass with alpha stopped reported no error")
	}
	if got := view().String(); got != "alpha=2" {
		t.Errorf("within the TTL beta sees %q, want alpha kept", got)
	}
	now = now.Add(2 * time.Second)
	_ = m.Sync(ctx)
	if got := view().String(); got != "" {
		t.Errorf("after the TTL beta sees %q, want alpha's slices gone", got)
	}
}
