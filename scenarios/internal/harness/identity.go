package harness

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The identity polykube-status reads with in the scenarios: a ServiceAccount bound to the
// ClusterRole that gitops/ ships for polykube-status.
const (
	StatusReaderClusterRole = "polykube-status-reader"
	StatusReaderNamespace   = "polykube-scenarios"
	StatusReaderName        = "polykube-status-reader"
)

type readerCache struct {
	mu  sync.Mutex
	cfg map[string]*rest.Config
}

// ReaderConfig returns the status-reader identity of a cluster: a token of a ServiceAccount
// bound only to the shipped polykube-status ClusterRole. It is made once per cluster and run.
func (sc *Scenario) ReaderConfig(ctx context.Context, cluster string) (*rest.Config, error) {
	sc.readers.mu.Lock()
	defer sc.readers.mu.Unlock()
	if cfg, ok := sc.readers.cfg[cluster]; ok {
		return cfg, nil
	}
	admin, err := sc.Fed.AdminConfig(cluster)
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return nil, err
	}
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return nil, err
	}
	if err := sc.installStatusReader(ctx, c, cluster); err != nil {
		return nil, err
	}
	if _, err := cs.RbacV1().ClusterRoles().Get(ctx, StatusReaderClusterRole, metav1.GetOptions{}); err != nil {
		return nil, fmt.Errorf("cluster %q has no ClusterRole %s after applying %s (does it still ship that role?): %w", cluster, StatusReaderClusterRole, sc.Config.StatusReader, err)
	}
	objs := []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: StatusReaderNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: StatusReaderName, Namespace: StatusReaderNamespace}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: StatusReaderName},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: StatusReaderClusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: StatusReaderName, Namespace: StatusReaderNamespace}},
		},
	}
	for _, o := range objs {
		if err := c.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("create %T %s in cluster %q: %w", o, o.GetName(), cluster, err)
		}
	}
	tok, err := cs.CoreV1().ServiceAccounts(StatusReaderNamespace).CreateToken(ctx, StatusReaderName, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("request a token for %s/%s in cluster %q: %w", StatusReaderNamespace, StatusReaderName, cluster, err)
	}
	cfg := withCredentialsOf(admin, &rest.Config{BearerToken: tok.Status.Token})
	if err := sc.awaitAllowed(ctx, cfg, cluster); err != nil {
		return nil, err
	}
	sc.readers.cfg[cluster] = cfg
	return cfg, nil
}

// awaitAllowed returns once the API server's authorizer lets the reader list Workloads in
// every namespace. A ClusterRoleBinding takes effect only when the API server's RBAC cache
// has it, a moment after it was created (longer on a loaded machine); a reader used before
// that is refused, which a scenario would take for the role being wrong.
func (sc *Scenario) awaitAllowed(ctx context.Context, cfg *rest.Config, cluster string) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	review := &authorizationv1.SelfSubjectAccessReview{Spec: authorizationv1.SelfSubjectAccessReviewSpec{
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Group: polykubev1alpha1.GroupVersion.Group, Resource: "workloads"},
	}}
	what := fmt.Sprintf("cluster %q to authorize the status reader (ClusterRoleBinding %s) to list Workloads", cluster, StatusReaderName)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		got, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, review, metav1.CreateOptions{})
		if err != nil {
			return err
		}
		if !got.Status.Allowed {
			return fmt.Errorf("not allowed yet (%s)", cmp.Or(got.Status.Reason, "no reason given"))
		}
		return nil
	})
}

// installStatusReader applies the kustomization that ships the status-reader ClusterRole
// (config statusReader, gitops/status-reader) to a cluster, as `kubectl apply -k` would.
func (sc *Scenario) installStatusReader(ctx context.Context, c client.Client, cluster string) error {
	dir := sc.Config.StatusReader
	res, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), dir)
	if err != nil {
		return fmt.Errorf("kustomize build %s (the status-reader ClusterRole polykube-status ships): %w", dir, err)
	}
	for _, r := range res.Resources() {
		// Not sc.apply: the role serves every scenario of the run, so no teardown deletes it.
		m, err := r.Map()
		if err != nil {
			return fmt.Errorf("read a resource of %s: %w", dir, err)
		}
		u := &unstructured.Unstructured{Object: m}
		if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
			return fmt.Errorf("install %s %s from %s in cluster %q: %w", u.GetKind(), u.GetName(), dir, cluster, err)
		}
	}
	return nil
}

// withCredentialsOf returns server's address and CA with the credentials of identity.
func withCredentialsOf(server, identity *rest.Config) *rest.Config {
	out := rest.AnonymousClientConfig(server)
	out.BearerToken = identity.BearerToken
	out.BearerTokenFile = identity.BearerTokenFile
	out.CertData, out.CertFile = identity.CertData, identity.CertFile
	out.KeyData, out.KeyFile = identity.KeyData, identity.KeyFile
	return out
}

// CheckCanRead lists each kind (all namespaces) with cfg in the cluster and fails on any error.
func CheckCanRead(ctx context.Context, cfg *rest.Config, cluster string, lists ...client.ObjectList) error {
	c, err := NewClient(cfg)
	if err != nil {
		return err
	}
	var errs []error
	for _, l := range lists {
		if err := c.List(ctx, l); err != nil {
			errs = append(errs, fmt.Errorf("list %T in cluster %q: %w", l, cluster, err))
		}
	}
	return errors.Join(errs...)
}

// CheckForbidden makes each request with cfg and fails unless every one is refused as
// Forbidden. Writes are dry runs against names that do not exist, so an identity that is
// allowed gets NotFound or succeeds without changing anything.
func CheckForbidden(ctx context.Context, cfg *rest.Config, cluster string, reqs ...Request) error {
	c, err := NewClient(cfg)
	if err != nil {
		return err
	}
	var allowed []string
	for _, r := range reqs {
		err := r.Do(ctx, c)
		if apierrors.IsForbidden(err) {
			continue
		}
		if err == nil {
			allowed = append(allowed, r.Name+": allowed")
		} else {
			allowed = append(allowed, fmt.Sprintf("%s: %v (not Forbidden)", r.Name, err))
		}
	}
	if len(allowed) > 0 {
		return fmt.Errorf("in cluster %q: %s", cluster, strings.Join(allowed, "; "))
	}
	return nil
}

// CheckUnauthorized fails unless the cluster rejects cfg's credentials as Unauthorized.
func CheckUnauthorized(ctx context.Context, cfg *rest.Config, cluster string) error {
	c, err := NewClient(cfg)
	if err != nil {
		return err
	}
	err = c.List(ctx, &polykubev1alpha1.WorkloadList{})
	if apierrors.IsUnauthorized(err) {
		return nil
	}
	if err == nil {
		return fmt.Errorf("cluster %q accepted the credentials and listed Workloads", cluster)
	}
	return fmt.Errorf("cluster %q: want 401 Unauthorized, got %w", cluster, err)
}

// Request is one API request an identity makes in a permission check.
type Request struct {
	Name string
	Do   func(ctx context.Context, c client.Client) error
}

// ReadRequests are get and list of a kind in a namespace.
func ReadRequests(kind string, namespace string, obj client.Object, list client.ObjectList) []Request {
	return []Request{
		{Name: "list " + kind, Do: func(ctx context.Context, c client.Client) error {
			return c.List(ctx, list, client.InNamespace(namespace))
		}},
		{Name: "get " + kind, Do: func(ctx context.Context, c client.Client) error {
			return c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: "polykube-probe"}, obj)
		}},
	}
}

// WriteRequests are dry-run create, patch and delete of a kind in a namespace.
func WriteRequests(kind string, newObj func() client.Object, namespace string) []Request {
	named := func() client.Object {
		o := newObj()
		o.SetNamespace(namespace)
		o.SetName("polykube-probe")
		return o
	}
	return []Request{
		{Name: "create " + kind, Do: func(ctx context.Context, c client.Client) error {
			return c.Create(ctx, named(), client.DryRunAll)
		}},
		{Name: "update " + kind, Do: func(ctx context.Context, c client.Client) error {
			return c.Patch(ctx, named(), client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"labels":{"probe":"x"}}}`)), client.DryRunAll)
		}},
		{Name: "delete " + kind, Do: func(ctx context.Context, c client.Client) error {
			return c.Delete(ctx, named(), client.DryRunAll)
		}},
	}
}

// WriteKinds are the kinds whose writes a read-only identity must be refused.
var WriteKinds = map[string]func() client.Object{
	"Workload":   func() client.Object { return &polykubev1alpha1.Workload{} },
	"Deployment": func() client.Object { return &appsv1.Deployment{} },
	"Secret":     func() client.Object { return &corev1.Secret{} },
}

// CheckRejectedBy presents identity's credentials to another cluster's API server and fails
// unless that server rejects them as Unauthorized.
func (sc *Scenario) CheckRejectedBy(ctx context.Context, identity *rest.Config, cluster string) error {
	admin, err := sc.Fed.AdminConfig(cluster)
	if err != nil {
		return err
	}
	return CheckUnauthorized(ctx, withCredentialsOf(admin, identity), cluster)
}

// ForEachReader runs fn for every cluster and joins the errors.
func (sc *Scenario) ForEachReader(ctx context.Context, fn func(ctx context.Context, cluster string, sc *Scenario) error) error {
	var errs []error
	for _, cl := range sc.Fed.Clusters() {
		errs = append(errs, fn(ctx, cl, sc))
	}
	return errors.Join(errs...)
}
