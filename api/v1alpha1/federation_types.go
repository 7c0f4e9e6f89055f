package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FederationSpec is the roster of member clusters and the mesh that connects them.
type FederationSpec struct {
	// Members are the names of the member clusters; each must have a ClusterMember of the same name.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=511
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	Members []string `json:"members"`

	// Mesh is the cross-cluster network the federation relies on.
	// +optional
	// +kubebuilder:default={type: cilium-clustermesh, maxConnectedClusters: 255}
	Mesh FederationMesh `json:"mesh,omitempty"`
}

// FederationMesh describes the mesh that connects the members.
type FederationMesh struct {
	// Type is the mesh implementation.
	// +optional
	// +kubebuilder:default=cilium-clustermesh
	// +kubebuilder:validation:Enum=cilium-clustermesh
	Type string `json:"type,omitempty"`

	// MaxConnectedClusters is Cilium's clustermesh.maxConnectedClusters: 255 or 511. It bounds
	// the cluster IDs the members may use.
	// +optional
	// +kubebuilder:default=255
	// +kubebuilder:validation:Enum=255;511
	MaxConnectedClusters int32 `json:"maxConnectedClusters,omitempty"`
}

// FederationMemberStatus is one roster entry as this cluster sees it.
type FederationMemberStatus struct {
	// Name of the member.
	Name string `json:"name"`
	// Present is true when a ClusterMember of that name exists in this cluster.
	Present bool `json:"present"`
	// Local is true for the cluster this status was written in.
	// +optional
	Local bool `json:"local,omitempty"`
	// ClusterID is the member's cluster ID, when present.
	// +optional
	ClusterID int32 `json:"clusterID,omitempty"`
}

// FederationStatus is the roster check performed by this cluster's operator.
type FederationStatus struct {
	// ObservedGeneration is the generation last processed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LocalCluster is the name of the cluster this status was written in (the operator's
	// --cluster-name).
	// +optional
	LocalCluster string `json:"localCluster,omitempty"`

	// Members lists every roster entry with what this cluster knows of it.
	// +optional
	// +listType=map
	// +listMapKey=name
	Members []FederationMemberStatus `json:"members,omitempty"`

	// Conditions report each ClusterMesh prerequisite (ClusterIdentified, MembersPresent,
	// ClusterIDsValid, ClusterNamesValid, PodCIDRsDisjoint, LocalMemberListed,
	// OverlayEndpointsUnique) and Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Federation is the roster of clusters that run Polykube together, and the checks each
// cluster makes of it locally.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,shortName=pkfed;pkfeds,categories=polykube
// +kubebuilder:printcolumn:name="Members",type=string,JSONPath=`.spec.members`
// +kubebuilder:printcolumn:name="Local",type=string,JSONPath=`.status.localCluster`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Federation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec FederationSpec `json:"spec"`
	// +optional
	Status FederationStatus `json:"status,omitempty"`
}

// FederationList is a list of Federations.
//
// +kubebuilder:object:root=true
type FederationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Federation `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Federation{}, &FederationList{})
}

// GetConditions returns the status conditions.
func (in *Federation) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Federation) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
