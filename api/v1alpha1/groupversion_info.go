// Package v1alpha1 holds the Polykube alpha API: ClusterMember, Federation, Workload,
// ServiceEndpoint and DatastoreBinding in the group polykube.kismet.io.
//
// This package imports only apimachinery and core types; nothing of the operator.
//
// +kubebuilder:object:generate=true
// +groupName=polykube.kismet.io
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version of every Polykube alpha resource.
	GroupVersion = schema.GroupVersion{Group: "polykube.kismet.io", Version: "v1alpha1"}

	// SchemeBuilder registers the Polykube types with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the Polykube types to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
