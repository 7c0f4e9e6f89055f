// Package existing is the test-bed provider for clusters that already exist: each cluster of
// the topology names a kubeconfig context. It creates nothing and deletes nothing.
package existing

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// Name is the provider's name in a topology.
const Name = topology.ProviderExisting

// Provider hands out the topology's existing contexts.
type Provider struct{ opts provider.Options }

var _ provider.Provider = (*Provider)(nil)

// New returns the provider.
func New(opts provider.Options) *Provider { return &Provider{opts: opts} }

// Name implements provider.Provider.
func (p *Provider) Name() string { return Name }

// Capabilities implements provider.Provider. Whether an existing cluster has a data path
// is not known, so it claims none.
func (p *Provider) Capabilities() []provider.Capability { return Capabilities }

// Capabilities are none: existing clusters are used as they are.
var Capabilities []provider.Capability

func (p *Provider) cluster(name string) (*provider.Cluster, error) {
	c := p.opts.Topology.Cluster(name)
	if c == nil {
		return nil, fmt.Errorf("cluster %s is not in topology %s", name, p.opts.Topology.Name)
	}
	kubeconfig := c.Kubeconfig
	if kubeconfig == "" {
		kubeconfig = os.Getenv("KUBECONFIG")
	}
	if kubeconfig == "" {
		home, _ := os.UserHomeDir()
		kubeconfig = filepath.Join(home, ".kube", "config")
	}
	return &provider.Cluster{Name: name, Kubeconfig: kubeconfig, Context: c.Context}, nil
}

// Create checks that the context exists and its API server is ready; it creates nothing.
func (p *Provider) Create(ctx context.Context, c topology.Cluster) (*provider.Cluster, error) {
	cl, err := p.cluster(c.Name)
	if err != nil {
		return nil, err
	}
	raw, err := clientcmd.LoadFromFile(cl.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("cluster %s: load kubeconfig %s: %w", c.Name, cl.Kubeconfig, err)
	}
	if _, ok := raw.Contexts[cl.Context]; !ok {
		return nil, fmt.Errorf("cluster %s: context %q is not in %s; fix clusters[].context or clusters[].kubeconfig", c.Name, cl.Context, cl.Kubeconfig)
	}
	cfg, err := cl.RESTConfig()
	if err != nil {
		return nil, err
	}
	if err := provider.WaitReady(ctx, cfg, p.opts.Topology.Wait(topology.WaitClusterReady), c.Name); err != nil {
		return nil, err
	}
	return cl, nil
}

// Delete does nothing: the cluster is not ours.
func (p *Provider) Delete(context.Context, string) error { return nil }

// Stop is not supported: the test bed does not stop clusters it does not own.
func (p *Provider) Stop(_ context.Context, name string) error {
	return fmt.Errorf("stop %s: %w (existing clusters are never stopped by the test bed)", name, provider.ErrNotSupported)
}

// Start is not supported.
func (p *Provider) Start(_ context.Context, name string) error {
	return fmt.Errorf("start %s: %w (existing clusters are never stopped by the test bed)", name, provider.ErrNotSupported)
}

// Kubeconfig implements provider.Provider.
func (p *Provider) Kubeconfig(_ context.Context, name string) (*provider.Cluster, error) {
	return p.cluster(name)
}

// List implements provider.Provider: the topology's clusters.
func (p *Provider) List(context.Context) ([]string, error) {
	return p.opts.Topology.ClusterNames(), nil
}
