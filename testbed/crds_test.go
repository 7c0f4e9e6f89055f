package testbed

import (
	"context"
	"net/url"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/polykube/polykube/testbed/topology"
)

const testCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: things.example.com
spec:
  group: example.com
  names: {kind: Thing, plural: things}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema: {openAPIV3Schema: {type: object}}
`

// crdClient is a fake API server that fails the first applies with err and then stores the
// CRD, Established.
func crdClient(t *testing.T, failures int, err error) (client.Client, *int) {
	scheme := runtime.NewScheme()
	NewWithT(t).Expect(apiextensionsv1.AddToScheme(scheme)).To(Succeed())
	calls := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, _ client.Patch, _ ...client.PatchOption) error {
			calls++
			if calls <= failures {
				return err
			}
			return c.Create(ctx, &apiextensionsv1.CustomResourceDefinition{
				ObjectMeta: metav1.ObjectMeta{Name: obj.GetName()},
				Status: apiextensionsv1.CustomResourceDefinitionStatus{Conditions: []apiextensionsv1.CustomResourceDefinitionCondition{
					{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue}}},
			})
		},
	}).Build()
	return c, &calls
}

func crdDir(t *testing.T) string {
	dir := t.TempDir()
	NewWithT(t).Expect(os.WriteFile(filepath.Join(dir, "things.yaml"), []byte(testCRD), 0o644)).To(Succeed())
	return dir
}

var crdWait = topology.Wait{Timeout: topology.Duration{Duration: 5 * time.Second}, Interval: topology.Duration{Duration: 10 * time.Millisecond}}

// A loaded API server answers a large CRD's apply after the client's timeout (Argo CD's
// ApplicationSet CRD, under a loaded machine): the apply is idempotent and is tried again
// within the wait, instead of failing the bring-up.
func TestApplyCRDDir_RetriesATimedOutApply(t *testing.T) {
	g := NewWithT(t)
	clientTimeout := &url.Error{Op: "Patch", URL: "https://127.0.0.1/apis", Err: timeoutErr{}}
	for name, err := range map[string]error{
		"client timeout": clientTimeout,
		"server timeout": apierrors.NewServerTimeout(schema.GroupResource{Group: "apiextensions.k8s.io", Resource: "customresourcedefinitions"}, "patch", 1),
		"too many":       apierrors.NewTooManyRequests("slow down", 1),
	} {
		c, calls := crdClient(t, 2, err)
		g.Expect(ApplyCRDDir(context.Background(), c, crdDir(t), crdWait)).To(Succeed(), name)
		g.Expect(*calls).To(Equal(3), name)
	}
}

// An apply the API server refuses is not tried again: it fails at once, with the CRD named.
func TestApplyCRDDir_RefusedApplyFailsAtOnce(t *testing.T) {
	g := NewWithT(t)
	c, calls := crdClient(t, 100, apierrors.NewBadRequest("spec.names.kind: Required value"))
	err := ApplyCRDDir(context.Background(), c, crdDir(t), crdWait)
	g.Expect(err).To(MatchError(ContainSubstring("apply CRD things.example.com")))
	g.Expect(err).To(MatchError(ContainSubstring("Required value")))
	g.Expect(*calls).To(Equal(1))
}

// timeoutErr is what net/http returns when the client's Timeout passes.
type timeoutErr struct{}

func (timeoutErr) Error() string {
	return "net/http: request canceled (Client.Timeout exceeded while awaiting headers)"
}
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }
