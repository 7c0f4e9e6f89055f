package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ClusterMemberSpec describes one member cluster of a federation: where it runs and the network
// facts that Cilium ClusterMesh needs. The object's name is the cluster's name.
//
// +kubebuilder:validation:XValidation:rule="self.network.type != 'netmaker' || (has(self.network.endpoint) && self.network.endpoint.size() > 0)",message="spec.network.endpoint is required when spec.network.type is netmaker"
type ClusterMemberSpec struct {
	// Provider is where the cluster runs.
	// +required
	// +kubebuilder:validation:Enum=aws;gcp;azure;onprem;kind;k0s;kwok;other
	Provider string `json:"provider"`

	// Region is the provider's region, for example eu-central-1.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Region string `json:"region,omitempty"`

	// Zone is the provider's zone within the region, if the cluster is zonal.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	Zone string `json:"zone,omitempty"`

	// Labels are free-form facts about the cluster (tier, jurisdiction, cost class).
	// +optional
	// +kubebuilder:validation:MaxProperties=64
	Labels map[string]string `json:"labels,omitempty"`

	// Mesh holds the Cilium ClusterMesh identity of the cluster.
	// +required
	Mesh ClusterMeshSettings `json:"mesh"`

	// Network is the overlay that connects this cluster's nodes to other members when they do
	// not share a network.
	// +optional
	// +kubebuilder:default={type: none}
	Network NetworkOverlay `json:"network,omitempty"`
}

// ClusterMeshSettings are the per-cluster settings Cilium ClusterMesh requires to be unique.
type ClusterMeshSettings struct {
	// ClusterID is Cilium's cluster.id: unique in the federation, 1-255 (or 1-511 when the
	// federation's maxConnectedClusters is 511).
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=511
	ClusterID int32 `json:"clusterID"`

	// PodCIDRs are the cluster's pod networks. They must not overlap another member's.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="self.all(c, isCIDR(c))",message="spec.mesh.podCIDRs: every entry must be a CIDR such as 10.242.0.0/16"
	// +listType=set
	PodCIDRs []string `json:"podCIDRs"`

	// ServiceCIDR is the cluster's service network.
	// +optional
	// +kubebuilder:validation:MaxLength=43
	// +kubebuilder:validation:XValidation:rule="isCIDR(self)",message="spec.mesh.serviceCIDR must be a CIDR such as 10.96.0.0/16"
	ServiceCIDR string `json:"serviceCIDR,omitempty"`
}

// NetworkOverlay selects how this member reaches the others.
type NetworkOverlay struct {
	// Type is the overlay: none (members share a routable network) or netmaker (WireGuard).
	// +optional
	// +kubebuilder:default=none
	// +kubebuilder:validation:Enum=none;netmaker
	Type string `json:"type,omitempty"`

	// Endpoint is the overlay's public endpoint for this member (host:port), required for netmaker.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Endpoint string `json:"endpoint,omitempty"`
}

// ClusterMemberStatus is what the operator of this cluster observed about the member.
type ClusterMemberStatus struct {
	// ObservedGeneration is the generation last processed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Local is true on the ClusterMember that names the cluster this status was written in.
	// +optional
	Local bool `json:"local,omitempty"`

	// OperatorVersion is the version of the Polykube operator running in this cluster, written
	// only on the local ClusterMember. While a fleet upgrades one cluster at a time, the local
	// members of the clusters show which release each runs.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	OperatorVersion string `json:"operatorVersion,omitempty"`

	// Conditions describe the member as seen from this cluster.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// ClusterMember is one cluster of a Polykube federation. Git delivers the same roster to every
// cluster; each operator finds itself in it by name.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=pkmember;pkmembers,categories=polykube
// +kubebuilder:printcolumn:name="Provider",type=string,JSONPath=`.spec.provider`
// +kubebuilder:printcolumn:name="Region",type=string,JSONPath=`.spec.region`
// +kubebuilder:printcolumn:name="Cluster ID",type=integer,JSONPath=`.spec.mesh.clusterID`
// +kubebuilder:printcolumn:name="Local",type=boolean,JSONPath=`.status.local`
// +kubebuilder:printcolumn:name="Operator",type=string,JSONPath=`.status.operatorVersion`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 32",message="metadata.name: a cluster name must be at most 32 characters (Cilium ClusterMesh limit)"
// +kubebuilder:validation:XValidation:rule="self.metadata.name.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name: a cluster name must be a DNS label: lowercase letters, digits and '-', starting and ending with a letter or digit"
type ClusterMember struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec ClusterMemberSpec `json:"spec"`
	// +optional
	Status ClusterMemberStatus `json:"status,omitempty"`
}

// ClusterMemberList is a list of ClusterMembers.
//
// +kubebuilder:object:root=true
type ClusterMemberList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ClusterMember `json:"items"`
}

func init() {
	SchemeBuilder.Register(&ClusterMember{}, &ClusterMemberList{})
}

// GetConditions returns the status conditions.
func (in *ClusterMember) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *ClusterMember) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
