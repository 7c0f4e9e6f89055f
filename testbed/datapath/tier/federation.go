package tier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
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
	op := b.state.Operator
	return b.WaitDeploymentIn(ctx, cluster, op.Namespace, op.Name)
}

// Commit writes a change to the run's Git repository, asks Flux in every cluster to fetch it
// (Fetch) and returns the revision. A cluster that cannot be asked is skipped: its Flux
// fetches at its interval.
func (b *Bed) Commit(ctx context.Context, ch gitrepo.Change) (string, error) {
	if !b.env.Runner.Note("commit to %s: %s", b.GitURL(), ch.Message) {
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
