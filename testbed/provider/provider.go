// Package provider defines how the test bed gets clusters: a Provider per backend (kwok,
// an existing kubeconfig context, kind and k0s), each creating, deleting,
// stopping and starting the clusters of a topology and handing out their kubeconfigs.
package provider

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Capability is something a provider's clusters can do.
type Capability string

const (
	// CapabilityDatapath: pods really run and reach each other across clusters (Cilium
	// ClusterMesh). kind and k0s have it; kwok does not.
	CapabilityDatapath Capability = "datapath"
	// CapabilityCreate: the provider creates and deletes clusters (existing does not).
	CapabilityCreate Capability = "create"
	// CapabilityStopStart: the provider can stop and start a cluster's API server.
	CapabilityStopStart Capability = "stop-start"
	// CapabilityFakeNodes: nodes and pods are simulated (kwok).
	CapabilityFakeNodes Capability = "fake-nodes"
	// CapabilityPartition: the provider can cut the network between two of its clusters'
	// nodes (it implements Partitioner). kind has it.
	CapabilityPartition Capability = "partition"
)

// ErrNotSupported is wrapped by the error of an operation the provider cannot do.
var ErrNotSupported = errors.New("not supported by this provider")

// Cluster is a running cluster as a provider hands it out.
type Cluster struct {
	Name string
	// Kubeconfig is the path of an admin kubeconfig for this cluster alone.
	Kubeconfig string
	// Context is the context to use in Kubeconfig.
	Context string
}

// RESTConfig loads the cluster's admin client configuration.
func (c *Cluster) RESTConfig() (*rest.Config, error) {
	return RESTConfig(c.Kubeconfig, c.Context)
}

// RESTConfig loads a client configuration from a kubeconfig file and context.
func RESTConfig(kubeconfig, context string) (*rest.Config, error) {
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
		&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig},
		&clientcmd.ConfigOverrides{CurrentContext: context}).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("load kubeconfig %s (context %q): %w", kubeconfig, context, err)
	}
	// Inline the certificate files: client-go caches TLS transports by file path, so a
	// cluster re-created under the same path (same run name) would be dialled with the
	// previous cluster's CA in a long-lived process.
	if err := rest.LoadTLSFiles(cfg); err != nil {
		return nil, fmt.Errorf("load the certificates of kubeconfig %s: %w", kubeconfig, err)
	}
	cfg.CAFile, cfg.CertFile, cfg.KeyFile = "", "", ""
	return cfg, nil
}

// Provider creates and controls the clusters of a topology. Every method is idempotent:
// Create on a running cluster returns it, Delete on a missing one succeeds.
type Provider interface {
	// Name is the provider's name as a topology writes it (kwok, existing, kind, k0s).
	Name() string
	// Capabilities says what the provider's clusters can do.
	Capabilities() []Capability
	// Create makes the cluster and returns once its API server is ready.
	Create(ctx context.Context, c topology.Cluster) (*Cluster, error)
	// Delete removes the cluster and everything the provider keeps for it.
	Delete(ctx context.Context, name string) error
	// Stop stops the cluster's control plane, keeping its state; it returns once the API
	// server no longer answers.
	Stop(ctx context.Context, name string) error
	// Start starts a stopped cluster and returns once its API server is ready.
	Start(ctx context.Context, name string) error
	// Kubeconfig returns the cluster as created, or an error if it does not exist.
	Kubeconfig(ctx context.Context, name string) (*Cluster, error)
	// List returns the clusters the provider knows of in its state.
	List(ctx context.Context) ([]string, error)
}

// Partitioner is a provider that can cut the network between two of its clusters: all
// traffic between the nodes of one and the nodes of the other is dropped, both ways, while
// each keeps its own network and the host still reaches both API servers. Only providers
// whose nodes have a network of their own implement it (kind); kwok's clusters do not.
type Partitioner interface {
	// Partition drops the traffic between the nodes of clusters a and b and returns once a's
	// nodes no longer reach b's. It is idempotent.
	Partition(ctx context.Context, a, b string) error
	// Heal undoes Partition and returns once a's nodes reach b's again.
	Heal(ctx context.Context, a, b string) error
}

// Has reports whether p has capability c.
func Has(p Provider, c Capability) bool { return slices.Contains(p.Capabilities(), c) }

// Options are what every provider is built with.
type Options struct {
	// Dir is where the provider keeps its state for this run.
	Dir string
	// Topology supplies the clusters' facts and the waits.
	Topology *topology.Topology
	// Log receives progress lines; nil discards them.
	Log io.Writer
}

// WaitReady waits until the API server answers /readyz and the default ServiceAccount of
// the default namespace exists (the controller-manager is then working too).
func WaitReady(ctx context.Context, cfg *rest.Config, w topology.Wait, cluster string) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = w.Interval.Duration*4 + 2e9
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.For(ctx, w, fmt.Sprintf("the API server of %s to be ready", cluster), func(ctx context.Context) error {
		body, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
		if err != nil {
			return fmt.Errorf("/readyz: %v %s", err, body)
		}
		if _, err := cs.CoreV1().ServiceAccounts(metav1.NamespaceDefault).Get(ctx, "default", metav1.GetOptions{}); err != nil {
			return fmt.Errorf("default ServiceAccount: %w", err)
		}
		return nil
	})
}

// WaitUnreachable waits until the API server no longer answers /readyz.
func WaitUnreachable(ctx context.Context, cfg *rest.Config, w topology.Wait, cluster string) error {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 2e9
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	return wait.For(ctx, w, fmt.Sprintf("the API server of %s to stop answering", cluster), func(ctx context.Context) error {
		if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err == nil {
			return errors.New("/readyz still answers")
		}
		return nil
	})
}

// EnsureNamespace creates the namespace ns if it is missing.
func EnsureNamespace(ctx context.Context, cs kubernetes.Interface, ns string) error {
	_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create namespace %s: %w", ns, err)
	}
	return nil
}
