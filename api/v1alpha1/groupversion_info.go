// Package v1alpha1 holds the Polykube alpha API: ClusterMember, Federation, Workload,
// ServiceEndpoint and DatastoreBinding in the group polykube.kismet.io.
//
// This package is its own Go module (github.com/polykube/polykube/api) and imports only
// Kubernetes' API machinery and core types, so other tools can use the types without pulling in
// the operator or the test bed.
//
// +kubebuilder:object:generate=true
// +groupName=polykube.kismet.io
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the group and version of every Polykube alpha resource.
	GroupVersion = schema.GroupVersion{Group: "polykube.kismet.io", Version: "v1alpha1"}

	// SchemeBuilder registers the Polykube types with a runtime.Scheme.
	SchemeBuilder = &typeRegistry{}

	// AddToScheme adds the Polykube types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// typeRegistry is apimachinery's SchemeBuilder with a Register that takes the objects, so each
// *_types.go file registers its kinds beside their definition. controller-runtime's scheme.Builder
// does the same, but importing it would make controller-runtime a dependency of the api module.
type typeRegistry struct{ runtime.SchemeBuilder }

// Register adds the given objects to the group version when the scheme is built.
func (r *typeRegistry) Register(objects ...runtime.Object) {
	r.SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, objects...)
		metav1.AddToGroupVersion(s, GroupVersion)
		return nil
	})
}
