package host

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"github.com/polykube/polykube/testbed/topology"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
)

// crdWait is short: the fake client answers at once.
var crdWait = topology.Wait{Timeout: topology.Duration{Duration: 5 * time.Second}, Interval: topology.Duration{Duration: 10 * time.Millisecond}}

// Right after Argo CD's CRDs are established a loaded API server may not serve the AppProject
// kind yet (the client's REST mapping finds no match): the default project is applied again
// within the wait rather than failing the bring-up.
func TestApplyArgoCDSettings_WaitsForTheAppProjectKind(t *testing.T) {
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	noMatch := 0
	c := fake.NewClientBuilder().WithScheme(scheme).WithInterceptorFuncs(interceptor.Funcs{
		Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, p client.Patch, opts ...client.PatchOption) error {
			if obj.GetObjectKind().GroupVersionKind().Kind == "AppProject" {
				if noMatch < 2 {
					noMatch++
					return &apimeta.NoKindMatchError{GroupKind: schema.GroupKind{Group: "argoproj.io", Kind: "AppProject"}, SearchedVersions: []string{"v1alpha1"}}
				}
				return nil
			}
			return nil
		},
	}).Build()
	g.Expect(applyArgoCDSettings(context.Background(), c, map[string]string{"k": "v"}, crdWait)).To(Succeed())
	g.Expect(noMatch).To(Equal(2))
}
