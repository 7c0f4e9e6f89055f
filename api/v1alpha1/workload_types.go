package v1alpha1

import (
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Distribution strategies.
const (
	// StrategyStatic runs exactly the replicas given on each target.
	StrategyStatic = "Static"
	// StrategyMultiCloudWeighted keeps each target's explicit replicas and splits the rest of
	// distribution.replicas across the other targets in proportion to their weights.
	StrategyMultiCloudWeighted = "MultiCloudWeighted"
)

// WorkloadSpec is a portable backend workload: a pod template and how its replicas are
// distributed over the member clusters.
//
// +kubebuilder:validation:XValidation:rule="has(self.autoscaling) || self.distribution.strategy != 'MultiCloudWeighted' || has(self.distribution.replicas) || ((!has(self.distribution.targets) || self.distribution.targets.all(t, has(t.replicas))) && (!has(self.distribution.targetSelectors) || self.distribution.targetSelectors.all(s, has(s.replicas))))",message="spec.distribution: with strategy MultiCloudWeighted set either distribution.replicas (a total split by weight) or replicas on every target and every targetSelectors rule"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || !has(self.distribution.failover)",message="spec.autoscaling cannot be combined with spec.distribution.failover (docs/known-limitations.md)"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || (self.distribution.strategy == 'Static' ? !has(self.autoscaling.minReplicas) && !has(self.autoscaling.maxReplicas) : has(self.autoscaling.minReplicas) && has(self.autoscaling.maxReplicas))",message="spec.autoscaling.minReplicas and maxReplicas are required with MultiCloudWeighted (totals split by weight) and not allowed with Static (set replicas and maxReplicas per target)"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || self.distribution.strategy == 'Static' || (!has(self.distribution.replicas) && (!has(self.distribution.targets) || self.distribution.targets.all(t, !has(t.replicas) && has(t.weight))) && (!has(self.distribution.targetSelectors) || self.distribution.targetSelectors.all(s, has(s.weight))))",message="spec.distribution: with spec.autoscaling and MultiCloudWeighted, set a weight and no replicas on every target and rule, and no distribution.replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || self.distribution.strategy == 'Static' || has(self.distribution.targetSelectors) || !has(self.distribution.targets) || self.distribution.targets.exists(t, has(t.weight) && t.weight > 0)",message="spec.distribution.targets: with spec.autoscaling and MultiCloudWeighted, one target needs a weight above 0"
// +kubebuilder:validation:XValidation:rule="!has(self.autoscaling) || self.distribution.strategy != 'Static' || ((!has(self.distribution.targets) || self.distribution.targets.all(t, has(t.maxReplicas))) && (!has(self.distribution.targetSelectors) || self.distribution.targetSelectors.all(s, has(s.maxReplicas))))",message="spec.distribution: with spec.autoscaling and Static, every target and rule needs maxReplicas (its replicas is the floor)"
// +kubebuilder:validation:XValidation:rule="(has(self.autoscaling) && self.distribution.strategy == 'Static') || ((!has(self.distribution.targets) || self.distribution.targets.all(t, !has(t.maxReplicas))) && (!has(self.distribution.targetSelectors) || self.distribution.targetSelectors.all(s, !has(s.maxReplicas))))",message="spec.distribution: targets[].maxReplicas and targetSelectors[].maxReplicas need spec.autoscaling and strategy Static"
type WorkloadSpec struct {
	// Distribution says how many replicas run in which cluster.
	// +required
	Distribution Distribution `json:"distribution"`

	// Template is the pod template of the Deployment each targeted cluster runs.
	// +required
	Template corev1.PodTemplateSpec `json:"template"`

	// Ports, when set, make the operator create a ClusterIP Service named after the Workload
	// in every targeted cluster, selecting the Workload's pods.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=map
	// +listMapKey=name
	Ports []WorkloadPort `json:"ports,omitempty"`

	// Overrides change typed parts of the template in the clusters they select, in list order:
	// each applies to the result of the ones before it, so a later override wins on the same
	// field. The spec stays the same in every cluster; each operator renders its own effective
	// template from it and from its own ClusterMember (decision 0005). The list is atomic
	// because its order is meaning.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	// +kubebuilder:validation:XValidation:rule="self.all(o, self.exists_one(p, p.name == o.name))",message="spec.overrides[].name must be unique: two overrides have the same name"
	Overrides []WorkloadOverride `json:"overrides,omitempty"`

	// Autoscaling, when set, makes each targeted cluster run an HPA of the Workload's name for
	// its Deployment, between its own minimum and maximum (decision 0008). The operator creates
	// the Deployment with the minimum and then leaves its replicas to the HPA.
	// +optional
	Autoscaling *Autoscaling `json:"autoscaling,omitempty"`

	// Suspend, when true, stops the operator from changing anything for this Workload in this
	// cluster (its Deployment, Service and HPA are left as they are, hand edits included): it
	// writes only the Ready condition (Unknown, reason Suspended) until suspend is
	// false again, and then reconciles as usual. Set it in Git to pause every cluster, or patch
	// it in one cluster for a hand fix there (Flux's server-side apply keeps a field Git does not
	// set).
	// +optional
	Suspend bool `json:"suspend,omitempty"`
}

// Autoscaling is the horizontal autoscaling of a Workload, as autoscaling/v2 has it, with the
// bounds given for the whole fleet (MultiCloudWeighted) or per target (Static).
//
// +kubebuilder:validation:XValidation:rule="!has(self.minReplicas) || !has(self.maxReplicas) || self.minReplicas <= self.maxReplicas",message="spec.autoscaling.minReplicas must be at most maxReplicas"
type Autoscaling struct {
	// MinReplicas is the fleet's minimum, split by weight (MultiCloudWeighted only); a cluster's
	// share is raised to 1 where its maximum is above 0.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the fleet's maximum, split by weight (MultiCloudWeighted only).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// Metrics are the HPA's metrics (autoscaling/v2); unset, 80% average CPU utilization.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=atomic
	Metrics []autoscalingv2.MetricSpec `json:"metrics,omitempty"`

	// Behavior is the HPA's scaling behavior (autoscaling/v2).
	// +optional
	Behavior *autoscalingv2.HorizontalPodAutoscalerBehavior `json:"behavior,omitempty"`
}

// WorkloadOverride changes typed parts of the Workload's template in the clusters it selects.
//
// +kubebuilder:validation:XValidation:rule="has(self.images) || has(self.env) || has(self.resources) || has(self.nodeSelector) || has(self.tolerations) || has(self.podLabels) || has(self.podAnnotations)",message="spec.overrides[]: set at least one change: images, env, resources, nodeSelector, tolerations, podLabels or podAnnotations"
type WorkloadOverride struct {
	// Name identifies the override in status.appliedOverrides and in error messages; unique in
	// spec.overrides.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// ClusterSelector chooses the clusters the override applies in.
	// +required
	ClusterSelector ClusterSelector `json:"clusterSelector"`

	// Images change the registry, repository or tag of named containers' images.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=container
	Images []ImageOverride `json:"images,omitempty"`

	// Env sets or removes env vars of named containers.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=container
	Env []EnvOverride `json:"env,omitempty"`

	// Resources set requests and limits of named containers, per resource; resources not named
	// keep their value.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=16
	// +listType=map
	// +listMapKey=container
	Resources []ResourcesOverride `json:"resources,omitempty"`

	// NodeSelector entries are set on the pod's node selector; other entries are kept.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations are added to the pod's tolerations (one equal to an existing one is not
	// added twice).
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// PodLabels are set on the pod template's labels; other labels are kept. The pod selector
	// label polykube.kismet.io/workload cannot be overridden.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=32
	// +kubebuilder:validation:XValidation:rule="!('polykube.kismet.io/workload' in self)",message="spec.overrides[].podLabels cannot set polykube.kismet.io/workload: it is the pod selector the operator sets"
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are set on the pod template's annotations; other annotations are kept.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=64
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
}

// ClusterSelector chooses clusters of the roster. With both fields set, a cluster must be named
// in clusterNames and match labelSelector.
//
// +kubebuilder:validation:XValidation:rule="has(self.clusterNames) || has(self.labelSelector)",message="spec.overrides[].clusterSelector: set clusterNames, labelSelector or both"
type ClusterSelector struct {
	// ClusterNames are ClusterMember names.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=511
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=32
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	ClusterNames []string `json:"clusterNames,omitempty"`

	// LabelSelector matches the ClusterMember's spec.labels plus the well-known keys
	// polykube.kismet.io/cluster (its name), polykube.kismet.io/provider,
	// polykube.kismet.io/region and polykube.kismet.io/zone, which win over a label of the same
	// key. An empty selector ({}) matches every cluster.
	// +optional
	LabelSelector *metav1.LabelSelector `json:"labelSelector,omitempty"`
}

// ImageOverride changes parts of a container's image reference,
// [registry/]repository[:tag][@digest]; the parts not set are kept.
//
// +kubebuilder:validation:XValidation:rule="has(self.registry) || has(self.repository) || has(self.tag)",message="spec.overrides[].images[]: set at least one of registry, repository or tag"
type ImageOverride struct {
	// Container names a container or init container of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Container string `json:"container"`

	// Registry replaces the registry host, with an optional port (mirror.eu.example.com,
	// registry.local:5000, localhost:5000); the repository is kept as written. A digest is kept.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-zA-Z0-9]([-a-zA-Z0-9.]*[a-zA-Z0-9])?(:[0-9]{1,5})?$`
	// +kubebuilder:validation:XValidation:rule="self == 'localhost' || self.contains('.') || self.contains(':')",message="spec.overrides[].images[].registry must contain a '.' or a port, or be localhost; otherwise it reads as the first part of the repository"
	Registry string `json:"registry,omitempty"`

	// Repository replaces the repository path (team/billing). A digest is kept.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	// +kubebuilder:validation:Pattern=`^[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*(/[a-z0-9]+((\.|_|__|-+)[a-z0-9]+)*)*$`
	Repository string `json:"repository,omitempty"`

	// Tag replaces the tag. A digest is dropped: an image with a digest ignores its tag.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$`
	Tag string `json:"tag,omitempty"`
}

// EnvOverride sets or removes env vars of a container.
//
// +kubebuilder:validation:XValidation:rule="has(self.set) || has(self.remove)",message="spec.overrides[].env[]: set at least one of set or remove"
// +kubebuilder:validation:XValidation:rule="!has(self.set) || !has(self.remove) || !self.set.exists(v, v.name in self.remove)",message="spec.overrides[].env[]: a variable cannot be both in set and in remove"
type EnvOverride struct {
	// Container names a container or init container of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Container string `json:"container"`

	// Set replaces the env var of the same name in place, or appends it.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +listType=map
	// +listMapKey=name
	Set []corev1.EnvVar `json:"set,omitempty"`

	// Remove deletes env vars by name; a name the container does not have is ignored.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=253
	// +listType=set
	Remove []string `json:"remove,omitempty"`
}

// ResourcesOverride sets requests and limits of a container, per resource name.
//
// +kubebuilder:validation:XValidation:rule="has(self.requests) || has(self.limits)",message="spec.overrides[].resources[]: set at least one of requests or limits"
type ResourcesOverride struct {
	// Container names a container or init container of the template.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Container string `json:"container"`

	// Requests are set per resource (cpu, memory, ...); requests not named are kept.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=16
	Requests corev1.ResourceList `json:"requests,omitempty"`

	// Limits are set per resource; limits not named are kept.
	// +optional
	// +kubebuilder:validation:MinProperties=1
	// +kubebuilder:validation:MaxProperties=16
	Limits corev1.ResourceList `json:"limits,omitempty"`
}

// Distribution is the placement of a Workload's replicas over clusters.
//
// +kubebuilder:validation:XValidation:rule="self.strategy != 'Static' || !has(self.replicas)",message="spec.distribution.replicas is only allowed with strategy MultiCloudWeighted; with Static set replicas on each target"
// +kubebuilder:validation:XValidation:rule="has(self.targets) || has(self.targetSelectors)",message="spec.distribution: set targets, targetSelectors or both"
// +kubebuilder:validation:XValidation:rule="self.strategy != 'Static' || !has(self.targets) || self.targets.all(t, has(t.replicas))",message="spec.distribution.targets[].replicas is required on every target when strategy is Static"
// +kubebuilder:validation:XValidation:rule="self.strategy != 'Static' || !has(self.targetSelectors) || self.targetSelectors.all(s, has(s.replicas))",message="spec.distribution.targetSelectors[].replicas is required on every rule when strategy is Static (weight needs MultiCloudWeighted)"
// +kubebuilder:validation:XValidation:rule="self.strategy != 'MultiCloudWeighted' || !has(self.replicas) || !has(self.targets) || self.targets.all(t, has(t.replicas) || has(t.weight))",message="spec.distribution.targets[].weight is required on every target without replicas when strategy is MultiCloudWeighted and distribution.replicas is set"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || !has(self.targets) || self.targets.filter(t, has(t.replicas)).map(t, t.replicas).sum() <= self.replicas",message="spec.distribution.replicas must be at least the sum of the targets' explicit replicas"
// +kubebuilder:validation:XValidation:rule="!has(self.replicas) || has(self.targetSelectors) || !has(self.targets) || self.targets.filter(t, has(t.replicas)).map(t, t.replicas).sum() == self.replicas || self.targets.exists(t, !has(t.replicas) && has(t.weight) && t.weight > 0)",message="spec.distribution: the replicas left after the targets' explicit replicas need at least one target with a weight above 0 and no explicit replicas"
type Distribution struct {
	// Strategy is Static (each target's replicas as given) or MultiCloudWeighted (explicit
	// replicas stand; a total in replicas is split over the other targets by weight).
	// +required
	// +kubebuilder:validation:Enum=Static;MultiCloudWeighted
	Strategy string `json:"strategy"`

	// Replicas is the total to distribute with MultiCloudWeighted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Replicas *int32 `json:"replicas,omitempty"`

	// Targets are clusters the Workload runs in, named explicitly. A target wins over every
	// targetSelectors rule for the cluster it names.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=511
	// +listType=map
	// +listMapKey=clusterRef
	Targets []DistributionTarget `json:"targets,omitempty"`

	// TargetSelectors add targets by label: each rule selects ClusterMembers of the roster (the
	// ClusterMembers in the cluster) and gives every one it selects the rule's replicas or
	// weight. A cluster named in targets keeps its explicit entry; a cluster selected by several
	// rules takes the first. Every cluster holds the same roster, so every cluster resolves the
	// same targets; a ClusterMember that joins with matching labels becomes a target without an
	// edit of the Workload. The list is atomic because its order is meaning.
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=32
	// +listType=atomic
	TargetSelectors []TargetSelector `json:"targetSelectors,omitempty"`

	// Failover, when set, lets this cluster run extra replicas for peers that, as this
	// cluster's view of the mesh shows, serve fewer ready endpoints than their share (decision
	// 0006). It needs a ServiceEndpoint for the Workload: the signal is the EndpointSlices
	// Cilium mirrors for its Service. Unset, the Deployment runs the allocation, exactly.
	// +optional
	Failover *Failover `json:"failover,omitempty"`
}

// Failover is the opt-in capacity failover of a Workload: detect a peer's deficit, absorb it
// capped, give it back after the peer has served again for a while.
//
// +kubebuilder:validation:XValidation:rule="!has(self.detectAfter) || !has(self.returnAfter) || duration(self.returnAfter) >= duration(self.detectAfter)",message="spec.distribution.failover.returnAfter must be at least detectAfter (default returnAfter 10m, detectAfter 2m): giving replicas back sooner than taking them would flap"
type Failover struct {
	// DetectAfter is how long a peer's deficit must be seen before this cluster absorbs it; a
	// shorter blip moves nothing. A Go duration (90s, 2m, 1h); default 2m.
	// +optional
	// +kubebuilder:default="2m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="spec.distribution.failover.detectAfter must be a positive duration such as 90s or 2m"
	DetectAfter *metav1.Duration `json:"detectAfter,omitempty"`

	// ReturnAfter is how long a peer must be seen serving its share again before this cluster
	// gives its extra replicas back (make-before-break). A Go duration; default 10m; at least
	// detectAfter.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) > duration('0s')",message="spec.distribution.failover.returnAfter must be a positive duration such as 10m"
	ReturnAfter *metav1.Duration `json:"returnAfter,omitempty"`

	// MaxSurge caps the extra replicas this cluster runs for its peers: a number of replicas,
	// or a percentage ("50%") of this cluster's base share, rounded up. 0 turns the surge off
	// and keeps the status. Default "100%": a cluster at most doubles.
	// +optional
	// +kubebuilder:default="100%"
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:XValidation:rule="type(self) == int ? (self >= 0 && self <= 100000) : self.matches('^[0-9]{1,5}%$')",message="spec.distribution.failover.maxSurge must be a non-negative number of replicas (at most 100000) or a percentage such as \"100%\""
	MaxSurge *intstr.IntOrString `json:"maxSurge,omitempty"`

	// HandoverTimeout bounds how long this cluster keeps its previous share when the roster
	// grows (decision 0011): a target that newly gets replicas (a ClusterMember that starts to
	// match a selector, a weight that rises from 0) takes them from the others only once it is
	// seen serving them, or after this long. A Go duration; unset means 10m; 0s gives the share
	// up at once, as before. It has no API default on purpose: a default would change the spec
	// (and its hash) that operators of an earlier version read.
	// +optional
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('0s')",message="spec.distribution.failover.handoverTimeout must be a duration such as 10m, or 0s to give a share up at once"
	HandoverTimeout *metav1.Duration `json:"handoverTimeout,omitempty"`
}

// TargetSelector is one rule of distribution.targetSelectors: the clusters it selects and the
// share each of them gets.
//
// +kubebuilder:validation:XValidation:rule="has(self.replicas) != has(self.weight)",message="spec.distribution.targetSelectors[]: set exactly one of replicas or weight"
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || !has(self.replicas) || self.replicas <= self.maxReplicas",message="spec.distribution.targetSelectors[].replicas must be at most maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || !has(self.replicas) || self.maxReplicas == 0 || self.replicas >= 1",message="spec.distribution.targetSelectors[].replicas must be at least 1 when maxReplicas is above 0"
type TargetSelector struct {
	// LabelSelector matches the ClusterMember's spec.labels plus the well-known keys
	// polykube.kismet.io/cluster (its name), polykube.kismet.io/provider,
	// polykube.kismet.io/region and polykube.kismet.io/zone, which win over a label of the same
	// key (the labels overrides select on). It must not be empty: to target every cluster say
	// so, for example with {matchExpressions: [{key: polykube.kismet.io/cluster, operator: Exists}]}.
	// +required
	// +kubebuilder:validation:XValidation:rule="(has(self.matchLabels) && size(self.matchLabels) > 0) || (has(self.matchExpressions) && size(self.matchExpressions) > 0)",message="spec.distribution.targetSelectors[].labelSelector must not be empty: set matchLabels or matchExpressions"
	LabelSelector metav1.LabelSelector `json:"labelSelector"`

	// Replicas is the explicit replica count of every cluster the rule selects (as
	// targets[].replicas).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Replicas *int32 `json:"replicas,omitempty"`

	// Weight is the relative share of every cluster the rule selects, with MultiCloudWeighted
	// (as targets[].weight).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	Weight *int32 `json:"weight,omitempty"`

	// MaxReplicas is the autoscaling maximum of every cluster the rule selects (Static).
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// DistributionTarget is one cluster's share of a Workload.
//
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || !has(self.replicas) || self.replicas <= self.maxReplicas",message="spec.distribution.targets[].replicas must be at most maxReplicas"
// +kubebuilder:validation:XValidation:rule="!has(self.maxReplicas) || !has(self.replicas) || self.maxReplicas == 0 || self.replicas >= 1",message="spec.distribution.targets[].replicas must be at least 1 when maxReplicas is above 0"
type DistributionTarget struct {
	// ClusterRef is the name of a ClusterMember.
	// +required
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=32
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	ClusterRef string `json:"clusterRef"`

	// Replicas is this cluster's explicit replica count. With MultiCloudWeighted it is kept
	// as given and taken out of the total before the weighted split.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	Replicas *int32 `json:"replicas,omitempty"`

	// Weight is this cluster's relative share of the total with MultiCloudWeighted.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1000000
	Weight *int32 `json:"weight,omitempty"`

	// MaxReplicas is this cluster's autoscaling maximum (Static); replicas is its minimum.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=100000
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`
}

// WorkloadPort is a port of the Workload's Service.
type WorkloadPort struct {
	// Name of the port, a DNS label.
	// +required
	// +kubebuilder:validation:MaxLength=15
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	Name string `json:"name"`

	// Port is the Service port.
	// +required
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	Port int32 `json:"port"`

	// TargetPort is the container port; defaults to Port.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	TargetPort int32 `json:"targetPort,omitempty"`

	// Protocol of the port.
	// +optional
	// +kubebuilder:default=TCP
	// +kubebuilder:validation:Enum=TCP;UDP;SCTP
	Protocol corev1.Protocol `json:"protocol,omitempty"`
}

// TargetStatus is one target's allocation as computed in the reporting cluster; the entry for
// the reporting cluster itself (Local) also carries what its Deployment observed.
type TargetStatus struct {
	// Cluster is the target's clusterRef.
	Cluster string `json:"cluster"`

	// DesiredReplicas is the allocation this cluster computed for the target (autoscaled: its
	// minimum).
	DesiredReplicas int32 `json:"desiredReplicas"`

	// MinReplicas is the target's HPA minimum as computed here (autoscaled).
	// +optional
	MinReplicas *int32 `json:"minReplicas,omitempty"`

	// MaxReplicas is the target's HPA maximum as computed here (autoscaled).
	// +optional
	MaxReplicas *int32 `json:"maxReplicas,omitempty"`

	// Local is true on the entry of the cluster that wrote this status.
	// +optional
	Local bool `json:"local,omitempty"`

	// ReadyReplicas observed on the local Deployment.
	// +optional
	ReadyReplicas *int32 `json:"readyReplicas,omitempty"`

	// AvailableReplicas observed on the local Deployment.
	// +optional
	AvailableReplicas *int32 `json:"availableReplicas,omitempty"`

	// UpdatedReplicas observed on the local Deployment.
	// +optional
	UpdatedReplicas *int32 `json:"updatedReplicas,omitempty"`

	// CurrentReplicas is the local Deployment's replicas (autoscaled).
	// +optional
	CurrentReplicas *int32 `json:"currentReplicas,omitempty"`

	// Phase of the local slice: Pending, Progressing, Ready or Degraded.
	// +optional
	// +kubebuilder:validation:Enum=Pending;Progressing;Ready;Degraded
	Phase string `json:"phase,omitempty"`

	// ObservedGeneration is the Workload generation the local entry reflects.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastUpdateTime is when the local entry last changed.
	// +optional
	LastUpdateTime *metav1.Time `json:"lastUpdateTime,omitempty"`
}

// WorkloadStatus is written by the operator of each cluster, about that cluster.
type WorkloadStatus struct {
	// ObservedGeneration is the generation last processed.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// LastHandledReconcileAt is the value of the reconcile.polykube.kismet.io/requestedAt
	// annotation when the operator last reconciled the object (as Flux's field of that name):
	// equal to the annotation once a requested reconcile ran.
	// +optional
	LastHandledReconcileAt string `json:"lastHandledReconcileAt,omitempty"`

	// Cluster is the name of the cluster that wrote this status.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// SpecHash is a hash of the spec this status was computed from, so copies of the Workload
	// in different clusters can be compared.
	// +optional
	SpecHash string `json:"specHash,omitempty"`

	// AppliedOverrides are the names of the spec.overrides that select this cluster, in the
	// order they were applied.
	// +optional
	// +listType=atomic
	AppliedOverrides []string `json:"appliedOverrides,omitempty"`

	// EffectiveTemplateHash is a hash of the template this cluster renders: spec.template with
	// the applied overrides (placement.TemplateHash; the operator's own additions, such as the
	// selector label and DatastoreBinding env vars, are not part of it). polykube-status can
	// recompute it from the spec and the cluster's ClusterMember.
	// +optional
	EffectiveTemplateHash string `json:"effectiveTemplateHash,omitempty"`

	// DesiredReplicas is this cluster's own allocation (0 when not targeted); autoscaled, the
	// Deployment's current replicas.
	// +optional
	DesiredReplicas int32 `json:"desiredReplicas,omitempty"`

	// ReadyReplicas is the ready replica count of this cluster's Deployment.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`

	// Phase of this cluster's slice.
	// +optional
	Phase string `json:"phase,omitempty"`

	// Targets is deprecated: operators before decision 0013 listed every target here with the
	// desired replicas computed in this cluster, a status that grew with the roster. This
	// operator no longer writes it and clears what an earlier one wrote; it stays readable so
	// that polykube-status can compare a cluster still running the previous release during an
	// upgrade. Read Local and Allocation instead.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Targets []TargetStatus `json:"targets,omitempty"`

	// Local is this cluster's own target entry: its allocation and what its Deployment
	// observed. Unset when this cluster is not a target.
	// +optional
	Local *TargetStatus `json:"local,omitempty"`

	// Allocation is a digest of the allocation this cluster computed for every target, so
	// copies in different clusters can be compared without each listing every target
	// (decision 0013): polykube-status recomputes the allocation from the spec and the roster
	// and compares the digest.
	// +optional
	Allocation *AllocationDigest `json:"allocation,omitempty"`

	// Autoscaling is this cluster's HPA bounds and current replicas (autoscaled, targeted).
	// +optional
	Autoscaling *AutoscalingStatus `json:"autoscaling,omitempty"`

	// Failover is this cluster's capacity failover for the Workload, when spec.distribution.failover
	// is set: its base and effective replicas and the peers whose deficit it absorbs or watches.
	// It is also the failover's memory: an operator restart resumes from it.
	// +optional
	Failover *FailoverStatus `json:"failover,omitempty"`

	// Conditions: Allocated, Ready, and FailoverReady when failover is set.
	// +optional
	// +listType=map
	// +listMapKey=type
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// AllocationDigest summarizes the allocation one cluster computed for every target of a Workload.
type AllocationDigest struct {
	// Digest is placement.AllocationDigest of the allocation: the first 16 hexadecimal digits
	// of the SHA-256 of every target's name and desired replicas, sorted by name.
	// +kubebuilder:validation:MaxLength=64
	Digest string `json:"digest"`

	// Targets is how many targets the allocation has (explicit and selected from the roster).
	Targets int32 `json:"targets"`

	// TargetsWithReplicas is how many of them have desired replicas above 0: what the next
	// reconcile compares to see whether a target newly got replicas (decision 0011's handover).
	// +optional
	TargetsWithReplicas int32 `json:"targetsWithReplicas,omitempty"`
}

// AutoscalingStatus is one cluster's autoscaling of a Workload.
type AutoscalingStatus struct {
	// MinReplicas is this cluster's HPA minimum.
	MinReplicas int32 `json:"minReplicas"`

	// MaxReplicas is this cluster's HPA maximum; 0: no HPA and no replicas here.
	MaxReplicas int32 `json:"maxReplicas"`

	// CurrentReplicas is the Deployment's spec.replicas, as the HPA last scaled it.
	CurrentReplicas int32 `json:"currentReplicas"`
}

// FailoverStatus is one cluster's failover: what it runs and what it remembers of each peer
// (placement.FailoverState).
type FailoverStatus struct {
	// BaseReplicas is this cluster's allocation, which failover never lowers.
	BaseReplicas int32 `json:"baseReplicas"`

	// ExtraReplicas is what this cluster runs for its peers' absorbed deficits, capped by maxSurge.
	// +optional
	ExtraReplicas int32 `json:"extraReplicas,omitempty"`

	// EffectiveReplicas is base plus extra: the Deployment's replicas.
	EffectiveReplicas int32 `json:"effectiveReplicas"`

	// Peers are the peers with an absorbed or pending deficit, sorted by cluster.
	// +optional
	// +listType=map
	// +listMapKey=cluster
	Peers []PeerFailoverStatus `json:"peers,omitempty"`

	// Handover is set while this cluster keeps its share from before the roster grew, until the
	// new targets serve theirs (decision 0011).
	// +optional
	Handover *HandoverStatus `json:"handover,omitempty"`
}

// HandoverStatus is a hold of this cluster's previous share while new targets come up.
type HandoverStatus struct {
	// HeldReplicas is this cluster's share before the roster grew, which it keeps running.
	HeldReplicas int32 `json:"heldReplicas"`

	// Until is when the hold ends even if a new target was never seen serving its share.
	Until metav1.Time `json:"until"`

	// Waiting are the new targets not yet seen serving their share, sorted; at most 10 are
	// listed (WaitingCount counts them all).
	// +optional
	// +listType=atomic
	// +kubebuilder:validation:MaxItems=10
	Waiting []string `json:"waiting,omitempty"`

	// WaitingCount is how many new targets are not yet seen serving their share.
	WaitingCount int32 `json:"waitingCount"`
}

// PeerFailoverStatus is what this cluster's failover remembers of one peer.
type PeerFailoverStatus struct {
	// Cluster is the peer's clusterRef.
	Cluster string `json:"cluster"`

	// AbsorbedReplicas is the peer's deficit acted on: the replicas it misses below its base
	// share, as this cluster saw them for detectAfter. The fleet's survivors split the sum.
	// +optional
	AbsorbedReplicas int32 `json:"absorbedReplicas,omitempty"`

	// Since is when the peer's deficit was first absorbed; unset while nothing is absorbed.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`

	// PendingSince is when the observed deficit started to differ from the absorbed one; a
	// rise takes effect after detectAfter, a fall after returnAfter.
	// +optional
	PendingSince *metav1.Time `json:"pendingSince,omitempty"`

	// PendingReplicas is what AbsorbedReplicas becomes when the wait is over.
	// +optional
	PendingReplicas int32 `json:"pendingReplicas,omitempty"`
}

// Workload is a backend workload distributed over member clusters. Every cluster holds the
// same Workload; each operator runs only its own slice.
//
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=pkwl;pkwls,categories=polykube
// +kubebuilder:printcolumn:name="Strategy",type=string,JSONPath=`.spec.distribution.strategy`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.status.cluster`
// +kubebuilder:printcolumn:name="Desired",type=integer,JSONPath=`.status.desiredReplicas`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyReplicas`
// +kubebuilder:printcolumn:name="Effective",type=integer,JSONPath=`.status.failover.effectiveReplicas`,priority=1
// +kubebuilder:printcolumn:name="Min",type=integer,JSONPath=`.status.autoscaling.minReplicas`,priority=1
// +kubebuilder:printcolumn:name="Max",type=integer,JSONPath=`.status.autoscaling.maxReplicas`,priority=1
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Suspended",type=boolean,JSONPath=`.spec.suspend`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 63 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="metadata.name must be a DNS-1035 label (lowercase letters, digits and '-', starting with a letter, ending with a letter or digit, at most 63 characters) because it names the Deployment, its pod label and the Service; rename the Workload"
type Workload struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec WorkloadSpec `json:"spec"`
	// +optional
	Status WorkloadStatus `json:"status,omitempty"`
}

// WorkloadList is a list of Workloads.
//
// +kubebuilder:object:root=true
type WorkloadList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Workload `json:"items"`
}

func init() {
	SchemeBuilder.Register(&Workload{}, &WorkloadList{})
}

// GetConditions returns the status conditions.
func (in *Workload) GetConditions() []metav1.Condition { return in.Status.Conditions }

// SetConditions replaces the status conditions.
func (in *Workload) SetConditions(c []metav1.Condition) { in.Status.Conditions = c }
