package status

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The kinds `events` and `bundle` read beyond the fleet view's. Secrets are deliberately absent
// from this scheme and this mapper: no Reader built here can even name them.

// Delivery kinds: the Flux and Argo CD objects that may deliver Polykube, read as unstructured
// objects so that polykube-status depends on neither project; a cluster without their CRDs
// answers 404 and they are skipped.
var (
	FluxKustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	FluxGitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
	FluxOCIRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"}
	ArgoApplicationGVK   = schema.GroupVersionKind{Group: "argoproj.io", Version: "v1alpha1", Kind: "Application"}
)

func wideScheme() (*runtime.Scheme, error) {
	s, err := Scheme()
	if err != nil {
		return nil, err
	}
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, eventsv1.AddToScheme, autoscalingv2.AddToScheme} {
		if err := add(s); err != nil {
			return nil, fmt.Errorf("register kinds: %w", err)
		}
	}
	return s, nil
}

func wideMapper() meta.RESTMapper {
	m := meta.NewDefaultRESTMapper(nil)
	gv := polykubev1alpha1.GroupVersion
	for _, k := range []string{"Workload", "ServiceEndpoint", "DatastoreBinding"} {
		m.Add(gv.WithKind(k), meta.RESTScopeNamespace)
	}
	m.Add(gv.WithKind("Federation"), meta.RESTScopeRoot)
	m.Add(gv.WithKind("ClusterMember"), meta.RESTScopeRoot)
	m.Add(appsv1.SchemeGroupVersion.WithKind("Deployment"), meta.RESTScopeNamespace)
	m.Add(autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"), meta.RESTScopeNamespace)
	m.Add(eventsv1.SchemeGroupVersion.WithKind("Event"), meta.RESTScopeNamespace)
	for _, k := range []string{"Event", "Service", "Pod", "ConfigMap"} {
		m.Add(corev1.SchemeGroupVersion.WithKind(k), meta.RESTScopeNamespace)
	}
	for _, gvk := range []schema.GroupVersionKind{FluxKustomizationGVK, FluxGitRepositoryGVK, FluxOCIRepositoryGVK, ArgoApplicationGVK} {
		m.Add(gvk, meta.RESTScopeNamespace)
	}
	return m
}

// newWideReader is NewReader over the kinds of events and bundle; as read-only as NewReader.
func newWideReader(cfg *rest.Config, timeout time.Duration) (Reader, error) {
	s, err := wideScheme()
	if err != nil {
		return nil, err
	}
	c, err := client.New(ReadOnlyConfig(cfg, timeout), client.Options{Scheme: s, Mapper: wideMapper()})
	if err != nil {
		return nil, fmt.Errorf("build client for %s: %w", cfg.Host, err)
	}
	return readOnly{r: c}, nil
}
