package harness

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// FieldOwner is the field manager of everything the harness applies.
const FieldOwner = "polykube-scenarios"

// Scheme knows the kinds the steps read and write.
var Scheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		corev1.AddToScheme, discoveryv1.AddToScheme, appsv1.AddToScheme, rbacv1.AddToScheme, authorizationv1.AddToScheme,
		apiextensionsv1.AddToScheme, polykubev1alpha1.AddToScheme,
		autoscalingv1.AddToScheme, autoscalingv2.AddToScheme, coordinationv1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err)
		}
	}
	return s
}()

// NewClient returns a client for cfg that knows Scheme.
func NewClient(cfg *rest.Config) (client.Client, error) {
	c, err := client.New(cfg, client.Options{Scheme: Scheme})
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return c, nil
}

// Clients caches one admin client per cluster.
type Clients struct {
	fed Federation
	mu  sync.Mutex
	m   map[string]client.Client
}

// NewClients returns an empty cache over fed.
func NewClients(fed Federation) *Clients { return &Clients{fed: fed, m: map[string]client.Client{}} }

// Admin returns the cluster-admin client of cluster.
func (c *Clients) Admin(cluster string) (client.Client, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.m[cluster]; ok {
		return cl, nil
	}
	cfg, err := c.fed.AdminConfig(cluster)
	if err != nil {
		return nil, fmt.Errorf("admin credentials of cluster %q: %w", cluster, err)
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 50, 100
	// A request to an API server that stopped answering fails in time for the step's wait
	// to try again, instead of hanging until the wait runs out.
	cfg.Timeout = 15 * time.Second
	cl, err := NewClient(cfg)
	if err != nil {
		return nil, err
	}
	c.m[cluster] = cl
	return cl, nil
}

// DecodeManifests splits a multi-document YAML manifest into objects. Documents without a
// kind are an error that says which document.
func DecodeManifests(data []byte) ([]*unstructured.Unstructured, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []*unstructured.Unstructured
	for i := 1; ; i++ {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("manifest document %d: %w", i, err)
		}
		if len(u.Object) == 0 {
			continue
		}
		if u.GetKind() == "" || u.GetAPIVersion() == "" {
			return nil, fmt.Errorf("manifest document %d has no apiVersion or kind", i)
		}
		out = append(out, u)
	}
}
