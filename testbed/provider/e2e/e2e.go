// Package e2e adapts a test-bed provider cluster to sigs.k8s.io/e2e-framework, so suites
// written for e2e-framework (envfuncs.CreateCluster, env.Setup, …) can run on the test bed's
// clusters: New returns a types.E2EClusterProvider for one cluster of a topology.
package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/rest"
	"sigs.k8s.io/e2e-framework/klient"
	"sigs.k8s.io/e2e-framework/pkg/types"

	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// Cluster is one test-bed cluster seen as an e2e-framework cluster provider.
type Cluster struct {
	p       provider.Provider
	top     *topology.Topology
	name    string
	cluster *provider.Cluster
	logDir  func(name string) string
}

var _ types.E2EClusterProvider = (*Cluster)(nil)

// New returns the e2e-framework provider of the named cluster of top, created by p.
// logDir, if not nil, gives the directory of the cluster's component logs for ExportLogs.
func New(p provider.Provider, top *topology.Topology, name string, logDir func(string) string) *Cluster {
	return &Cluster{p: p, top: top, name: name, logDir: logDir}
}

// WithName selects another cluster of the topology.
func (c *Cluster) WithName(name string) types.E2EClusterProvider { c.name = name; return c }

// WithVersion is ignored: the version is the toolchain's pinned Kubernetes.
func (c *Cluster) WithVersion(string) types.E2EClusterProvider { return c }

// WithPath is ignored: the provider's binaries come from the toolchain.
func (c *Cluster) WithPath(string) types.E2EClusterProvider { return c }

// WithOpts applies e2e-framework options.
func (c *Cluster) WithOpts(opts ...types.ClusterOpts) types.E2EClusterProvider {
	for _, o := range opts {
		o(c)
	}
	return c
}

// SetDefaults does nothing: the topology holds the cluster's settings.
func (c *Cluster) SetDefaults() types.E2EClusterProvider { return c }

// Create creates the cluster (idempotently) and returns its kubeconfig path.
func (c *Cluster) Create(ctx context.Context, _ ...string) (string, error) {
	tc := c.top.Cluster(c.name)
	if tc == nil {
		return "", fmt.Errorf("cluster %s is not in topology %s", c.name, c.top.Name)
	}
	cl, err := c.p.Create(ctx, *tc)
	if err != nil {
		return "", err
	}
	c.cluster = cl
	return cl.Kubeconfig, nil
}

// CreateWithConfig is Create: a test-bed cluster is configured by its topology.
func (c *Cluster) CreateWithConfig(ctx context.Context, _ string) (string, error) {
	return c.Create(ctx)
}

func (c *Cluster) get() *provider.Cluster {
	if c.cluster == nil {
		if cl, err := c.p.Kubeconfig(context.Background(), c.name); err == nil {
			c.cluster = cl
		}
	}
	return c.cluster
}

// GetKubeconfig returns the cluster's kubeconfig path ("" before it exists).
func (c *Cluster) GetKubeconfig() string {
	if cl := c.get(); cl != nil {
		return cl.Kubeconfig
	}
	return ""
}

// GenerateKubeconfig returns the kubeconfig path.
func (c *Cluster) GenerateKubeconfig(...string) (string, error) {
	if cl := c.get(); cl != nil {
		return cl.Kubeconfig, nil
	}
	return "", fmt.Errorf("cluster %s does not exist", c.name)
}

// GetKubectlContext returns the cluster's context.
func (c *Cluster) GetKubectlContext() string {
	if cl := c.get(); cl != nil {
		return cl.Context
	}
	return ""
}

// ExportLogs copies the cluster's component logs into dest.
func (c *Cluster) ExportLogs(_ context.Context, dest string) error {
	if c.logDir == nil {
		return fmt.Errorf("export logs of %s: %w", c.name, provider.ErrNotSupported)
	}
	files, err := filepath.Glob(filepath.Join(c.logDir(c.name), "*"))
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dest, 0o755); err != nil {
		return err
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		if err := os.WriteFile(filepath.Join(dest, filepath.Base(f)), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

// Destroy deletes the cluster.
func (c *Cluster) Destroy(ctx context.Context) error { return c.p.Delete(ctx, c.name) }

// WaitForControlPlane waits until the API server is ready (Create already did).
func (c *Cluster) WaitForControlPlane(ctx context.Context, _ klient.Client) error {
	cfg := c.KubernetesRestConfig()
	if cfg == nil {
		return fmt.Errorf("cluster %s does not exist", c.name)
	}
	return provider.WaitReady(ctx, cfg, c.top.Wait(topology.WaitClusterReady), c.name)
}

// KubernetesRestConfig returns the admin client configuration, or nil.
func (c *Cluster) KubernetesRestConfig() *rest.Config {
	cl := c.get()
	if cl == nil {
		return nil
	}
	cfg, err := cl.RESTConfig()
	if err != nil {
		return nil
	}
	return cfg
}
