package tier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/provider"
)

// What `polykube-testbed fault` and `git commit` and the scenario harness share: the API
// server fault and a commit that Flux fetches at once.

// fetchTimeout bounds the fetch request to one cluster, so that a cluster that is down
// delays a commit by at most this long.
const fetchTimeout = 10 * time.Second

// StopAPIServer stops the cluster through the provider: on kind and k0s in Docker that stops
// its node containers, so everything in the cluster stops, not only the API server. It
// returns once the API server no longer answers.
func (b *Bed) StopAPIServer(ctx context.Context, cluster string) error {
	if _, err := b.env.Member(cluster); err != nil {
		return err
	}
	return b.prov.Stop(ctx, cluster)
}

// StartAPIServer starts the cluster's nodes again, waits for the API server and then for the
// operator's Deployment, whose pod restarted with the node.
func (b *Bed) StartAPIServer(ctx context.Context, cluster string) error {
	if _, err := b.env.Member(cluster); err != nil {
		return err
	}
	if err := b.prov.Start(ctx, cluster); err != nil {
		return err
	}
	if err := b.reconnectMesh(ctx, cluster); err != nil {
		return err
	}
	op := b.state.Operator
	return b.WaitDeploymentIn(ctx, cluster, op.Namespace, op.Name)
}

// Partition cuts the network between the cluster's nodes and those of every other member
// (provider.Partitioner), both ways, and returns once it is in effect; HealPartition ends it.
// A provider whose clusters have no network of their own (k0s on hosts) refuses.
func (b *Bed) Partition(ctx context.Context, cluster string) error {
	return b.eachPeer(ctx, cluster, provider.Partitioner.Partition)
}

// HealPartition undoes Partition and returns once the cluster's nodes reach the others again.
func (b *Bed) HealPartition(ctx context.Context, cluster string) error {
	return b.eachPeer(ctx, cluster, provider.Partitioner.Heal)
}

func (b *Bed) eachPeer(ctx context.Context, cluster string, fn func(provider.Partitioner, context.Context, string, string) error) error {
	if _, err := b.env.Member(cluster); err != nil {
		return err
	}
	p, ok := b.prov.(provider.Partitioner)
	if !ok {
		return fmt.Errorf("provider %s claims the %s capability but cannot cut its clusters' networks (a test-bed bug: it must implement provider.Partitioner): %w",
			b.prov.Name(), provider.CapabilityPartition, provider.ErrNotSupported)
	}
	var errs []error
	for _, m := range b.env.Members {
		if m.Name != cluster {
			errs = append(errs, fn(p, ctx, cluster, m.Name))
		}
	}
	return errors.Join(errs...)
}

// reconnectMesh puts a restarted cluster back in the mesh when its nodes came back on other
// addresses: Docker gives a restarted container the next free address on its network, which
// need not be the one it had, and the other clusters' Cilium still dials the old one. Their
// Cilium is then upgraded with the new peer addresses (the agents and the operator reload the
// mesh configuration from the files of its Secret, no restart) and the run records them.
func (b *Bed) reconnectMesh(ctx context.Context, cluster string) error {
	a, ok := b.prov.(nodeAddresser)
	if !ok || len(b.env.Members) < 2 || b.env.Runner.DryRun() {
		return nil
	}
	m, err := b.env.Member(cluster)
	if err != nil {
		return err
	}
	was := b.state.MeshAddresses[m.Name]
	now, err := a.NodeAddresses(ctx, m.Name)
	if err != nil {
		return fmt.Errorf("the addresses of %s after its restart: %w", m.Name, err)
	}
	if len(was) == 0 || slices.Equal(was, now) {
		return nil
	}
	fmt.Fprintf(b.opts.Out, "• %s came back on %s (was %s): giving the other clusters' Cilium its new ClusterMesh address\n",
		m.Name, strings.Join(now, ", "), strings.Join(was, ", "))
	opts, err := b.ciliumOptions(ctx)
	if err != nil {
		return err
	}
	var others []string
	for _, o := range b.env.Members {
		if o.Name != m.Name {
			others = append(others, o.Name)
		}
	}
	if err := datapath.InstallCiliumIn(ctx, b.env, others, opts); err != nil {
		return fmt.Errorf("reconnect %s to the mesh: %w", m.Name, err)
	}
	return b.saveState()
}

// Commit writes a change to the run's Git repository, asks Flux in every cluster to fetch it
// (Fetch) and returns the revision. A cluster that cannot be asked is skipped: its Flux
// fetches at its interval.
func (b *Bed) Commit(ctx context.Context, ch gitrepo.Change) (string, error) {
	if !b.env.Runner.Note("commit to %s: %s (%s)", b.GitURL(), ch.Message, joinKeys(ch.Put)) {
		_ = b.Fetch(ctx)
		return "", nil
	}
	rev, err := gitrepo.Commit(ctx, b.GitURL(), ch)
	if err != nil {
		return "", err
	}
	_ = b.Fetch(ctx)
	return rev, nil
}

// Fetch asks Flux in every cluster to fetch Git now rather than at its interval: it sets the
// reconcile-request annotation on the GitRepository, as `flux reconcile source git` does. A
// new revision is then applied at once, since the Kustomization watches its source. The
// error names each cluster that could not be asked (one that is down, say); the others were.
func (b *Bed) Fetch(ctx context.Context) error {
	if !b.env.Runner.Note("ask Flux in every cluster to fetch now: annotate GitRepository %s/%s with %s",
		datapath.FluxNamespace, datapath.FluxObjectName, meta.ReconcileRequestAnnotation) {
		return nil
	}
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, meta.ReconcileRequestAnnotation, time.Now().UTC().Format(time.RFC3339Nano))
	var errs []error
	for _, m := range b.env.Members {
		err := func() error {
			cl, err := b.env.Client(m)
			if err != nil {
				return err
			}
			ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
			defer cancel()
			repo := &sourcev1.GitRepository{}
			repo.Namespace, repo.Name = datapath.FluxNamespace, datapath.FluxObjectName
			return cl.Patch(ctx, repo, client.RawPatch(types.MergePatchType, patch))
		}()
		if err != nil {
			errs = append(errs, fmt.Errorf("ask Flux in %s to fetch: %w", m.Name, err))
		}
	}
	return errors.Join(errs...)
}

func joinKeys(m map[string][]byte) string { return strings.Join(sortedKeys(m), ", ") }
