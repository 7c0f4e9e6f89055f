package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LocalSecretReference names a Secret in the same namespace, in the cluster where the binding
// is reconciled. Polykube never copies Secrets between clusters.
type LocalSecretReference struct {
	// Name of the Secret: a DNS subdomain, as every Secret's name is (lower case letters,
	// digits, '-' and '.'). A name no Secret can have would fail every read of it.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	Name string `json:"name"`
}

// EnvFromSecretKey maps one env var to one key of the Secret.
type EnvFromSecretKey struct {
	// Name of the env var (after the prefix is added).
	// +required
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Name string `json:"name"`

	// Key in the Secret.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	Key string `json:"key"`
}

// DatastoreBindingSpec wires a local Secret's keys into a Workload's containers as env vars.
type DatastoreBindingSpec struct {
	// WorkloadRef is the Workload whose containers get the env vars.
	// +required
	WorkloadRef LocalWorkloadReference `json:"workloadRef"`

	// SecretRef is the local Secret holding the connection details.
	// +required
	SecretRef LocalSecretReference `json:"secretRef"`

	// Env maps env var names to Secret keys. Values are referenced (secretKeyRef), never copied.
	// +required
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Env []EnvFromSecretKey `json:"env"`

	// Prefix is prepended to every env var name, for example DB_.
	// +optional
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z_][A-Za-z0-9_]*$`
	Prefix string `json:"prefix,omitempty"`

	// Containers limits the binding to these container names; empty means all containers.
	// +optional
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MaxLength=63
	// +listType=set
	Containers []string `json:"containers,omitempty"`

	// Suspend, when true, stops the operator from checking this DatastoreBinding's Secret in this
	// cluster: it writes only the Ready condition (Unknown, reason Suspended) until suspend is
	// false again. The Workload still wires the binding: suspend the Workload to freeze its
	// Deployment. Set it in Git to pause every cluster, or patch it in one cluster (Flux's
	// server-side apply keeps a field Git does not set).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// DatastoreBindingStatus reports whether the binding is wired in this cluster.
type DatastoreBindingStatus struct {
	// ObservedGeneration is the generation last processed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastHandledReconcileAt is the value of the reconcile.polykube.kismet.io/requestedAt
	// annotation when the operator last reconciled the object (as Flux's field of that name):
	// equal to the annotation once a requested reconcile ran.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// BoundEnv lists the env var names wired into the workload (names only, never values).
	// +optional
	// +listType=set
	BoundEnv []string `json:"boundEnv,omitempty"`

	// Conditions: Bound, Ready.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// DatastoreBinding injects connection settings from a Secret that exists in each cluster into
// a Workload's containers, as secretKeyRef env vars.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pkdb;pkdbs,categories=polykube
// +kubebuilder:printcolumn:name="Workload",type=string,JSONPath=`.spec.workloadRef.name`
// +kubebuilder:printcolumn:name="Secret",type=string,JSONPath=`.spec.secretRef.name`
// +kubebuilder:printcolumn:name="Bound",type=string,JSONPath=`.status.conditions[?(@.type=="Bound")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Bound")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type DatastoreBinding struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec DatastoreBindingSpec `json:"spec"`
	// +optional
	Status DatastoreBindingStatus `json:"status,omitempty"`
}

// DatastoreBindingList is a list of DatastoreBindings.
//
// +kubebuilder:object:root=true
type DatastoreBindingList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []DatastoreBinding `json:"items"`
}

func init() {
	SchemeBuilder.Register(&DatastoreBinding{}, &DatastoreBindingList{})
}

// GetConditions returns the status conditions.
func (in *DatastoreBinding) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *DatastoreBinding) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
