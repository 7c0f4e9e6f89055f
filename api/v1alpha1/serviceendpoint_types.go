package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Cilium global-service affinities.
const (
	AffinityNone   = "none"
	AffinityLocal  = "local"
	AffinityRemote = "remote"
)

// LocalWorkloadReference names a Workload in the same namespace.
type LocalWorkloadReference struct {
	// Name of the Workload.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
}

// ServiceEndpointSpec exposes a Workload as a Cilium ClusterMesh global service.
type ServiceEndpointSpec struct {
	// WorkloadRef is the Workload whose pods the Service selects.
	// +required
	WorkloadRef LocalWorkloadReference `json:"workloadRef"`

	// Ports of the Service.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Ports []WorkloadPort `json:"ports"`

	// Global sets service.cilium.io/global: the Service load-balances over the backends of
	// every member. A ServiceEndpoint exists to be global, so it defaults to true.
	// +optional
	// +kubebuilder:default=true
	Global *bool `json:"global,omitempty"`

	// Shared sets service.cilium.io/shared: whether this cluster's backends are offered to the
	// other members. Cilium's default is true.
	// +optional
	// +kubebuilder:default=true
	Shared *bool `json:"shared,omitempty"`

	// Affinity sets service.cilium.io/affinity: local prefers this cluster's backends while
	// any are healthy, remote prefers other clusters', none balances over all (Cilium's default).
	// +optional
	// +kubebuilder:default=none
	// +kubebuilder:validation:Enum=none;local;remote
	Affinity string `json:"affinity,omitempty"`

	// Suspend, when true, stops the operator from changing the ServiceEndpoint's Service in this
	// cluster: it writes only the Ready condition (Unknown, reason Suspended) until suspend is
	// false again, and then reconciles as usual. Set it in Git to pause every cluster, or patch
	// it in one cluster for a hand fix there (Flux's server-side apply keeps a field Git does not
	// set).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// ServiceEndpointStatus reports the local Service.
type ServiceEndpointStatus struct {
	// ObservedGeneration is the generation last processed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastHandledReconcileAt is the value of the reconcile.polykube.kismet.io/requestedAt
	// annotation when the operator last reconciled the object (as Flux's field of that name):
	// equal to the annotation once a requested reconcile ran.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// ServiceName is the local Service the operator manages.
	// +optional
	ServiceName string `json:"serviceName,omitempty"`

	// LocalReadyEndpoints counts ready endpoints of the Service in this cluster.
	// +optional
	LocalReadyEndpoints int32 `json:"localReadyEndpoints"`

	// Conditions: Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ServiceEndpoint makes a Service of the same name and namespace in every member cluster,
// annotated as a Cilium ClusterMesh global service, even where no replicas run locally.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pkse;pkses,categories=polykube
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workloadRef.name`
// +kubebuilder:printcolumn:name="Affinity",type=string,JSONPath=`.spec.affinity`
// +kubebuilder:printcolumn:name="Local Endpoints",type=integer,JSONPath=`.status.localReadyEndpoints`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, ending with a letter or digit, at most 63 characters) because it names the Service; rename the ServiceEndpoint"
type ServiceEndpoint struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ServiceEndpointSpec `json:"spec"`
	// +optional
	Status ServiceEndpointStatus `json:"status,omitempty"`
}

// ServiceEndpointList is a list of ServiceEndpoints.
//
// +kubebuilder:object:root=true
type ServiceEndpointList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ServiceEndpoint `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ServiceEndpoint{}, &ServiceEndpointList{})
}

// GetConditions returns the status conditions.
func (in *ServiceEndpoint) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ServiceEndpoint) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
