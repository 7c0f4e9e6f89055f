package serviceendpoint

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/polykube/polykube/operator/internal/unmanaged"
)

// The manager's cache holds only the Services Polykube made (setup.ManagedSelector). A Service
// of a ServiceEndpoint's name that Polykube did not make is a Conflict, which the cache of
// foreign objects reports (operator/internal/unmanaged).

// foreignOwner describes the owner of a Service of key's name that Polykube did not make, or
// returns "" when there is none.
func (r *Reconciler) foreignOwner(ctx context.Context, key client.ObjectKey) (string, error) {
	var reader client.Reader = r.Client
	if r.Foreign != nil {
		reader = r.Foreign
	}
	svc := unmanaged.Service()
	if err := reader.Get(ctx, key, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return "", nil
		}
		return "", fmt.Errorf("check whether Service %s exists that Polykube did not make: %w", key, err)
	}
	if unmanaged.Managed(svc) {
		// Polykube's: the manager's cache reports it (the cache of foreign objects holds none of
		// them; this reader is the client itself only in unit tests).
		return "", nil
	}
	return DescribeOwner(svc), nil
}

// watchForeign re-checks a ServiceEndpoint when a Service of its name that Polykube did not
// make appears or goes.
func (r *Reconciler) watchForeign(b *builder.Builder) *builder.Builder {
	if r.Foreign == nil {
		return b
	}
	named := handler.TypedEnqueueRequestsFromMapFunc(func(ctx context.Context, o *metav1.PartialObjectMetadata) []reconcile.Request {
		return r.sameName(ctx, o)
	})
	return b.WatchesRawSource(source.Kind(r.Foreign, unmanaged.Service(), named, unmanaged.NameTakenOrFreed[*metav1.PartialObjectMetadata]()))
}
