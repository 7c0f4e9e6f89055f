package meshmirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/polykube/polykube/internal/meshview"
)

const ns = "shop"

func service(name string, annotations map[string]string) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID("uid-" + name), Annotations: annotations,
			Labels: map[string]string{"app.kubernetes.io/managed-by": "polykube"}},
		Spec: corev1.ServiceSpec{ClusterIP: "10.96.0.10", Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}
}

var syncing = map[string]string{GlobalAnnotation: "true", SyncAnnotation: "true"}

// local is a slice as kube-controller-manager's EndpointSlice controller writes it.
func local(svc, name string, eps ...discoveryv1.Endpoint) *discoveryv1.EndpointSlice {
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			discoveryv1.LabelServiceName: svc, discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   eps,
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To[int32](8080), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
}

func ep(addr, uid string, ready, serving, terminating *bool) discoveryv1.Endpoint {
	return discoveryv1.Endpoint{
		Addresses:  []string{addr},
		Conditions: discoveryv1.EndpointConditions{Ready: ready, Serving: serving, Terminating: terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "pod-" + uid, UID: types.UID(uid)},
	}
}

type fixture struct {
	t       *testing.T
	now     time.Time
	clients map[string]*fake.Clientset
	down    map[string]*atomic.Bool
	mirror  *Mirror
	log     strings.Builder
}

func newFixture(t *testing.T, ttl time.Duration, objects map[string][]runtime.Object) *fixture {
	f := &fixture{t: t, now: time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC), clients: map[string]*fake.Clientset{}, down: map[string]*atomic.Bool{}}
	var clusters []Cluster
	for _, name := range []string{"alpha", "beta", "gamma"} {
		cs := fake.NewClientset(objects[name]...)
		down := &atomic.Bool{}
		cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
			if down.Load() {
				return true, nil, errors.New("connect: connection refused")
			}
			return false, nil, nil
		})
		f.clients[name], f.down[name] = cs, down
		clusters = append(clusters, Cluster{Name: name, Client: cs})
	}
	m, err := New(clusters, Options{Interval: time.Second, CacheTTL: ttl, Log: &f.log, Now: func() time.Time { return f.now }})
	if err != nil {
		t.Fatal(err)
	}
	f.mirror = m
	return f
}

func (f *fixture) sync() {
	f.t.Helper()
	_ = f.mirror.Sync(context.Background()) // a down cluster is an expected error
}

// view is what the operator of cluster would count for Service name, listing as it does.
func (f *fixture) view(cluster, name string) meshview.Ready {
	f.t.Helper()
	list, err := f.clients[cluster].DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: meshview.Selector(name).String()})
	if err != nil {
		f.t.Fatal(err)
	}
	return meshview.CountReady(list.Items, types.NamespacedName{Namespace: ns, Name: name}, cluster)
}

func fleet() map[string][]runtime.Object {
	return map[string][]runtime.Object{
		"alpha": {
			service("web", syncing),
			local("web", "web-abcde",
				ep("10.241.0.1", "a1", nil, nil, nil),
				ep("10.241.0.2", "a2", ptr.To(true), ptr.To(true), ptr.To(false)),
				ep("10.241.0.3", "a3", ptr.To(false), ptr.To(true), ptr.To(true)), // terminating, still serving: exported
				ep("10.241.0.4", "a4", ptr.To(false), ptr.To(false), ptr.To(false)),
			),
			service("private", map[string]string{GlobalAnnotation: "true", SharedAnnotation: "false", SyncAnnotation: "true"}),
			local("private", "private-abcde", ep("10.241.0.9", "p1", nil, nil, nil)),
			service("plain", nil),
			local("plain", "plain-abcde", ep("10.241.0.8", "q1", nil, nil, nil)),
		},
		"beta": {
			service("web", syncing),
			local("web", "web-fghij", ep("10.242.0.1", "b1", nil, nil, nil), ep("10.242.0.2", "b2", nil, nil, nil)),
			service("private", syncing),
			service("plain", syncing),
		},
		// gamma's web is global but does not ask for the peers' slices: it exports, gets none.
		"gamma": {
			service("web", map[string]string{GlobalAnnotation: "true"}),
			local("web", "web-klmno", ep("10.243.0.1", "g1", nil, nil, nil)),
		},
	}
}

func TestMirror_WhatTheOperatorCounts(t *testing.T) {
	f := newFixture(t, 5*time.Second, fleet())
	f.sync()

	if got := f.view("beta", "web").String(); got != "alpha=3, gamma=1" {
		t.Errorf("beta sees %q, want alpha=3 (ready or serving), gamma=1", got)
	}
	if got := f.view("alpha", "web").String(); got != "beta=2, gamma=1" {
		t.Errorf("alpha sees %q, want beta=2, gamma=1", got)
	}
	if got := f.view("gamma", "web").String(); got != "" {
		t.Errorf("gamma's Service has no sync annotation but gamma sees %q", got)
	}
	if got := f.view("beta", "private").String(); got != "" {
		t.Errorf("alpha's private Service is not shared but beta sees %q", got)
	}
	if got := f.view("beta", "plain").String(); got != "" {
		t.Errorf("alpha's plain Service is not global but beta sees %q", got)
	}
	// A second pass changes nothing (the mirror compares what it wrote).
	before := len(f.clients["beta"].Actions())
	f.sync()
	for _, a := range f.clients["beta"].Actions()[before:] {
		if a.GetVerb() != "list" && a.GetVerb() != "get" {
			t.Errorf("a pass over an unchanged fleet wrote to beta: %s %s", a.GetVerb(), a.GetResource().Resource)
		}
	}
}

func TestMirror_SliceAsCiliumWritesIt(t *testing.T) {
	f := newFixture(t, 0, fleet())
	f.sync()
	list, err := f.clients["beta"].DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{
		LabelSelector: LabelSourceCluster + "=alpha," + discoveryv1.LabelServiceName + "=web"})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("want one slice of alpha's web in beta, got %v (%v)", list, err)
	}
	sl := list.Items[0]
	wantLabels := map[string]string{
		"app.kubernetes.io/managed-by": "polykube", // the target Service's own labels
		LabelSourceCluster:             "alpha",
		discoveryv1.LabelServiceName:   "web",
		discoveryv1.LabelManagedBy:     "endpointslice-mesh-controller.cilium.io",
	}
	if !maps.Equal(sl.Labels, wantLabels) {
		t.Errorf("labels %v, want %v", sl.Labels, wantLabels)
	}
	if len(sl.OwnerReferences) != 1 || sl.OwnerReferences[0].Name != "web" || sl.OwnerReferences[0].UID != "uid-web" || !ptr.Deref(sl.OwnerReferences[0].Controller, false) {
		t.Errorf("owner references %v, want beta's Service web as controller", sl.OwnerReferences)
	}
	var addrs []string
	for _, e := range sl.Endpoints {
		addrs = append(addrs, e.Addresses[0])
		if !ptr.Deref(e.Conditions.Ready, false) || !ptr.Deref(e.Conditions.Serving, false) || ptr.Deref(e.Conditions.Terminating, true) {
			t.Errorf("endpoint %s conditions %+v, want ready, serving, not terminating", e.Addresses[0], e.Conditions)
		}
		if ptr.Deref(e.NodeName, "") != "alpha" || e.TargetRef == nil || e.TargetRef.Name != "fake-pod-"+e.Addresses[0] || e.TargetRef.UID != "" {
			t.Errorf("endpoint %s node %v target %v, want node alpha and fake-pod-<address> without UID", e.Addresses[0], e.NodeName, e.TargetRef)
		}
	}
	if got := strings.Join(addrs, ","); got != "10.241.0.1,10.241.0.2,10.241.0.3" {
		t.Errorf("endpoints %s", got)
	}
	if len(sl.Ports) != 1 || *sl.Ports[0].Port != 8080 || *sl.Ports[0].Name != "http" {
		t.Errorf("ports %v, want the backends' http/8080", sl.Ports)
	}
}

func TestMirror_StoppedClusterGoesAfterTheCacheTTL(t *testing.T) {
	f := newFixture(t, 5*time.Second, fleet())
	f.sync()
	f.down["alpha"].Store(true)

	f.now = f.now.Add(4 * time.Second)
	f.sync()
	if got := f.view("beta", "web").String(); got != "alpha=3, gamma=1" {
		t.Errorf("within the TTL beta sees %q, want alpha's last endpoints kept", got)
	}
	f.now = f.now.Add(time.Second) // 5s since alpha was last read
	f.sync()
	if got := f.view("beta", "web").String(); got != "gamma=1" {
		t.Errorf("after the TTL beta sees %q, want alpha gone", got)
	}
	if !f.mirror.Status().Clusters["alpha"].Revoked {
		t.Error("status does not say alpha was revoked")
	}

	f.down["alpha"].Store(false)
	f.now = f.now.Add(time.Second)
	f.sync()
	if got := f.view("beta", "web").String(); got != "alpha=3, gamma=1" {
		t.Errorf("after alpha returned beta sees %q", got)
	}
	for _, want := range []string{"cannot read alpha", "removing its mirrored endpoints", "alpha can be read again"} {
		if !strings.Contains(f.log.String(), want) {
			t.Errorf("the log does not say %q:\n%s", want, f.log.String())
		}
	}
}

func TestMirror_ZeroTTLKeepsAStoppedClusterForEver(t *testing.T) {
	f := newFixture(t, 0, fleet())
	f.sync()
	f.down["alpha"].Store(true)
	f.now = f.now.Add(time.Hour)
	f.sync()
	if got := f.view("beta", "web").String(); got != "alpha=3, gamma=1" {
		t.Errorf("with Cilium's default TTL 0 beta sees %q, want alpha kept", got)
	}
}

func TestMirror_FollowsScaleAndDeletion(t *testing.T) {
	f := newFixture(t, 5*time.Second, fleet())
	f.sync()
	// beta's pods all go: the mirror keeps an empty placeholder, so alpha sees beta=0.
	sl := local("web", "web-fghij")
	if _, err := f.clients["beta"].DiscoveryV1().EndpointSlices(ns).Update(context.Background(), sl, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.view("alpha", "web").String(); got != "beta=0, gamma=1" {
		t.Errorf("alpha sees %q, want beta=0 (a placeholder), gamma=1", got)
	}
	// beta's Service goes: nothing of beta is mirrored, and alpha's slices in beta go too.
	if err := f.clients["beta"].CoreV1().Services(ns).Delete(context.Background(), "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.sync()
	if got := f.view("alpha", "web").String(); got != "gamma=1" {
		t.Errorf("alpha sees %q after beta's Service went", got)
	}
	if got := f.view("beta", "web").String(); got != "" {
		t.Errorf("beta has no Service web but still holds mirrored slices: %q", got)
	}
}

func TestMirror_ChunksAndFamilies(t *testing.T) {
	var eps []discoveryv1.Endpoint
	for i := range 130 {
		eps = append(eps, ep(fmt.Sprintf("10.241.%d.%d", i/200, i%200+1), fmt.Sprintf("a%d", i), nil, nil, nil))
	}
	v6 := local("web", "web-v6", ep("fd00::1", "a6", nil, nil, nil))
	v6.AddressType = discoveryv1.AddressTypeIPv6
	objs := fleet()
	objs["alpha"] = []runtime.Object{service("web", syncing), local("web", "web-abcde", eps...), v6}
	f := newFixture(t, 0, objs)
	f.sync()
	list, _ := f.clients["beta"].DiscoveryV1().EndpointSlices(ns).List(context.Background(), metav1.ListOptions{LabelSelector: LabelSourceCluster + "=alpha"})
	var sizes []string
	for _, sl := range list.Items {
		sizes = append(sizes, fmt.Sprintf("%s:%d", sl.AddressType, len(sl.Endpoints)))
	}
	if got := strings.Join(sizes, " "); got != "IPv4:100 IPv4:30 IPv6:1" {
		t.Errorf("slices %s, want IPv4 in chunks of %d and IPv6 apart", got, MaxEndpointsPerSlice)
	}
	if got := f.view("beta", "web")["alpha"]; got != 130 {
		t.Errorf("beta counts %d of alpha's endpoints, want 130 (the larger family)", got)
	}
}

// The operator selects and counts mirrored slices with internal/meshview's names; the mirror
// writes Cilium's. They must be the same strings.
func TestMirror_NamesAreTheOperators(t *testing.T) {
	for _, c := range []struct{ cilium, operator string }{
		{ManagedBy, meshview.ManagedBy},
		{LabelSourceCluster, meshview.LabelSourceCluster},
		{SyncAnnotation, meshview.SyncAnnotation},
	} {
		if c.cilium != c.operator {
			t.Errorf("Cilium writes %q, the operator reads %q", c.cilium, c.operator)
		}
	}
}

func TestSyncs(t *testing.T) {
	headless := service("db", map[string]string{GlobalAnnotation: "true"})
	headless.Spec.ClusterIP = corev1.ClusterIPNone
	optedOut := headless.DeepCopy()
	optedOut.Annotations[SyncAnnotation] = "false"
	for _, c := range []struct {
		svc  *corev1.Service
		want bool
	}{
		{service("web", syncing), true},
		{service("web", map[string]string{GlobalAnnotation: "True", SyncAnnotation: "TRUE"}), true},
		{service("web", map[string]string{SyncAnnotation: "true"}), false},
		{service("web", map[string]string{GlobalAnnotation: "true"}), false},
		{headless, true},
		{optedOut, false},
	} {
		if got := Syncs(c.svc); got != c.want {
			t.Errorf("Syncs(%v, clusterIP %q) = %t, want %t", c.svc.Annotations, c.svc.Spec.ClusterIP, got, c.want)
		}
	}
}

// A cluster whose Cilium goes by another name (cilium-config's cluster-name) is mirrored under
// that name, as Cilium labels mirrored slices with its own cluster.name: the operators then see
// a source that is no ClusterMember. Removing the name mirrors it under its own again.
func TestMirror_CiliumClusterNameLabelsTheSlices(t *testing.T) {
	f := newFixture(t, 5*time.Second, fleet())
	f.sync()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cilium-config"},
		Data: map[string]string{"cluster-name": "gamma-prod"}}
	if _, err := f.clients["gamma"].CoreV1().ConfigMaps("kube-system").Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Second)
	f.sync()
	if got := f.view("beta", "web").String(); got != "alpha=3, gamma-prod=1" {
		t.Errorf("beta sees %q, want gamma's endpoints under gamma-prod", got)
	}
	if !strings.Contains(f.log.String(), `gamma now goes by "gamma-prod"`) {
		t.Errorf("the log does not say gamma's mesh name changed:\n%s", f.log.String())
	}
	if err := f.clients["gamma"].CoreV1().ConfigMaps("kube-system").Delete(context.Background(), "cilium-config", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	f.now = f.now.Add(time.Second)
	f.sync()
	if got := f.view("beta", "web").String(); got != "alpha=3, gamma=1" {
		t.Errorf("beta sees %q once gamma's name is its own again", got)
	}
}
