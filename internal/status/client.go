package status

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Reader is all the Kubernetes access polykube-status has: Get and List. It deliberately is not
// a client.Client, so no code path in the CLI can even express a write.
type Reader interface {
	Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error
	List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error
}

// readOnly hides every method of the wrapped client except Get and List (and streamList, a GET
// of a list whose body is read as it arrives).
type readOnly struct {
	r   client.Reader
	raw rest.Interface
}

func (c readOnly) streamList(ctx context.Context, path string, params url.Values) (io.ReadCloser, error) {
	req := c.raw.Get().AbsPath(path).SetHeader("Accept", "application/json")
	for k, vs := range params {
		for _, v := range vs {
			req.Param(k, v)
		}
	}
	return req.Stream(ctx)
}

func (c readOnly) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return c.r.Get(ctx, key, obj, opts...)
}

func (c readOnly) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return c.r.List(ctx, list, opts...)
}

// ErrWriteRefused is returned by the transport of every client polykube-status builds when
// anything tries to send a request other than GET, HEAD or OPTIONS.
var ErrWriteRefused = errors.New("polykube-status is read-only: refused to send a write request")

// readOnlyTransport refuses every request that could change the cluster before it leaves the
// process: a second wall behind the Reader interface, in case a client is ever built from the
// same rest.Config by mistake.
type readOnlyTransport struct{ next http.RoundTripper }

func (t readOnlyTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	switch req.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return t.next.RoundTrip(req)
	default:
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, fmt.Errorf("%w (%s %s)", ErrWriteRefused, req.Method, req.URL.Path)
	}
}

// CancelRequest passes client-go's legacy cancellation on to the transport below. The request's
// context cancels it anyway; without this method client-go logs "Warning: unable to cancel
// request" to stderr whenever a request times out, which garbles the CLI's output.
func (t readOnlyTransport) CancelRequest(req *http.Request) {
	if c, ok := t.next.(interface{ CancelRequest(*http.Request) }); ok {
		c.CancelRequest(req)
	}
}

// ReadOnlyConfig returns a copy of cfg whose transport refuses writes, with timeout as the
// client's overall HTTP timeout and API warnings silenced (they would garble the table).
func ReadOnlyConfig(cfg *rest.Config, timeout time.Duration) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Timeout = timeout
	out.WarningHandler = rest.NoWarnings{}
	out.QPS, out.Burst = 50, 100
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper { return readOnlyTransport{next: rt} })
	return out
}

// Scheme holds the kinds polykube-status reads.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := polykubev1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register polykube.kismet.io/v1alpha1: %w", err)
	}
	if err := appsv1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("register apps/v1: %w", err)
	}
	return s, nil
}

// staticMapper maps the few kinds polykube-status reads without API discovery, so a query costs
// one request per kind and a cluster without the CRDs answers a plain 404 on list.
func staticMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	gv := polykubev1alpha1.GroupVersion
	m.Add(gv.WithKind("Workload"), meta.RESTScopeNamespace)
	m.Add(gv.WithKind("ServiceEndpoint"), meta.RESTScopeNamespace)
	m.Add(gv.WithKind("DatastoreBinding"), meta.RESTScopeNamespace)
	m.Add(gv.WithKind("Federation"), meta.RESTScopeRoot)
	m.Add(gv.WithKind("ClusterMember"), meta.RESTScopeRoot)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	return m
}

// NewReader builds a Reader for cfg that can only read: the returned value exposes Get and List
// only, and its transport refuses anything but GET, HEAD and OPTIONS.
func NewReader(cfg *rest.Config, timeout time.Duration) (Reader, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	ro := ReadOnlyConfig(cfg, timeout)
	// One HTTP client, so one connection pool, for both.
	hc, err := rest.HTTPClientFor(ro)
	if err != nil {
		return nil, fmt.Errorf("build client for %s: %w", cfg.Host, err)
	}
	c, err := client.New(ro, client.Options{Scheme: s, Mapper: staticMapper(), HTTPClient: hc})
	if err != nil {
		return nil, fmt.Errorf("build client for %s: %w", cfg.Host, err)
	}
	rawCfg := rest.CopyConfig(ro)
	rawCfg.NegotiatedSerializer = serializer.NewCodecFactory(s).WithoutConversion()
	raw, err := rest.UnversionedRESTClientForConfigAndClient(rawCfg, hc)
	if err != nil {
		return nil, fmt.Errorf("build client for %s: %w", cfg.Host, err)
	}
	return readOnly{r: c, raw: raw}, nil
}
