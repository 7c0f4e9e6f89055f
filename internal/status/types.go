// Package status builds the read-only fleet view behind polykube-status.
//
// The flow is collect → merge → print. Collect queries the kubeconfig contexts in parallel (a
// bounded number at once) with a client that can only read, each with its own deadline that also
// bounds the context's exec credential plugin, and returns one Snapshot per context:
// the raw Workloads, Federations, ClusterMembers, ServiceEndpoints, DatastoreBindings and
// polykube-managed Deployments, or the classified reason the context could not be read. Merge is
// a pure function from snapshots to a Report: rows per workload with one cell per cluster, the
// federation and member views, every disagreement between clusters (no cluster is the truth, so
// each flag names all the clusters involved), the failures each operator reports about its own
// cluster, and a Summary with the exit code. Printers render a Report as a table, JSON or YAML
// and never query anything.
//
// Plan and Diff do the same for manifests on disk, with no cluster access at all.
package status

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// APIVersion is the schema version of every document this package prints as JSON or YAML.
const APIVersion = "polykube.kismet.io/status/v1alpha1"

// Document kinds.
const (
	KindFleetStatus = "FleetStatus"
	KindPlan        = "Plan"
	KindPlanDiff    = "PlanDiff"
)

// Exit codes. When several apply, the first in this order wins: ExitUnreachable, ExitFailing,
// ExitDisagreement, ExitNotReady. An incomplete view makes the other findings unreliable; an
// operator that reports a failure explains disagreements its stale status causes, and what
// needs a person matters more than a slice still rolling out. ExitInternal and ExitUsage end the
// run before any report exists.
const (
	ExitOK              = 0
	ExitInternal        = 1
	ExitUsage           = 2
	ExitUnreachable     = 3
	ExitDisagreement    = 4
	ExitNotReady        = 5
	ExitInvalidManifest = 6
	// ExitFailing: an operator reports a failure of a Workload, ServiceEndpoint or
	// DatastoreBinding in its cluster (Report.Failures).
	ExitFailing = 7
)

// Reasons a context could not be read (ClusterRow.Reason).
const (
	ReasonOK           = "OK"
	ReasonUnreachable  = "Unreachable"
	ReasonTimeout      = "Timeout"
	ReasonUnauthorized = "Unauthorized"
	ReasonForbidden    = "Forbidden"
	ReasonCRDsMissing  = "CRDsMissing"
	ReasonConfigError  = "ConfigError"
	ReasonError        = "Error"
)

// Disagreement kinds.
const (
	// DisagreeSpec: the copies of a Workload hold different specs.
	DisagreeSpec = "SpecMismatch"
	// DisagreeSpecHash: the copies' status.specHash differ although the specs read are equal
	// (an operator computed its status from another spec, or operators hash differently).
	DisagreeSpecHash = "SpecHashMismatch"
	// DisagreeAllocation: clusters computed different desiredReplicas for the same target.
	DisagreeAllocation = "AllocationMismatch"
	// DisagreeExpected: a cluster's status.targets (or, from operators of decision 0013 on, its
	// status.allocation digest) differ from placement.ForWorkloadIn of its
	// spec and its roster.
	DisagreeExpected = "AllocationNotAsComputed"
	// DisagreeInvalidSpec: placement.ForWorkloadIn rejects a cluster's copy of the spec.
	DisagreeInvalidSpec = "InvalidSpec"
	// DisagreeMissingCopy: a reachable cluster has no copy of a Workload or Federation others have.
	DisagreeMissingCopy = "MissingCopy"
	// DisagreeUnreported: a target with desired replicas > 0 that no reachable cluster reports as local.
	DisagreeUnreported = "UnreportedSlice"
	// DisagreeUntargeted: a cluster runs replicas of a Workload that does not target it.
	DisagreeUntargeted = "UntargetedReplicas"
	// DisagreeRoster: copies of a Federation list different members; or, on a Workload, the same
	// spec resolves different targets (targetSelectors) from the clusters' rosters.
	DisagreeRoster = "RosterMismatch"
	// DisagreeMember: copies of a ClusterMember have different specs.
	DisagreeMember = "MemberMismatch"
	// DisagreeDuplicateCluster: two contexts report the same cluster name.
	DisagreeDuplicateCluster = "DuplicateClusterName"
	// DisagreeTemplate: a cluster's status.appliedOverrides or status.effectiveTemplateHash
	// differ from placement.EffectiveTemplate of its spec and its ClusterMember, or its
	// Deployment runs other images than that effective template (merge_overrides.go).
	DisagreeTemplate = "TemplateNotAsComputed"
	// DisagreeFailover: a cluster's status.failover replicas differ from placement.FailoverFor
	// over the deficits the same status reports (merge_failover.go).
	DisagreeFailover = "FailoverNotAsComputed"
)

// Notice kinds: states worth showing that are not disagreements and do not change the exit code.
const (
	// NoticeFailoverActive: a cluster runs more than its base share because it absorbs the
	// deficit of peers it sees short of theirs (spec.distribution.failover).
	NoticeFailoverActive = "FailoverActive"
	// NoticeFailoverSurge (warning): every readable target of a Workload absorbs its peers'
	// share at once, so the fleet runs up to maxSurge over its total: the operators do not see
	// each other through the mesh, which a real outage of all but one cluster cannot explain.
	NoticeFailoverSurge = "FailoverSurge"
	// NoticeDeficitUnconfirmed (warning): a cluster absorbs a peer's deficit, but that peer's own
	// report has more ready replicas than the deficit leaves it: the absorbing cluster's view of
	// the mesh misses the peer (a partition, Cilium's cluster.name differing from the
	// ClusterMember name, endpoint-slice synchronisation off).
	NoticeDeficitUnconfirmed = "DeficitNotConfirmed"
	// NoticeVersionSkew: the reachable clusters' operators run different versions (status.
	// operatorVersion of each cluster's own ClusterMember), as they do while an upgrade moves one
	// cluster at a time (docs/upgrading.md). A warning when two of them are more than one minor
	// release apart, which the skew policy does not support.
	NoticeVersionSkew = "VersionSkew"
)

// Notice levels.
const (
	// LevelWarning marks a notice that something is probably wrong, though nothing failed.
	LevelWarning = "warning"
)

// Where a context's cluster name came from (ClusterRow.NameSource).
const (
	NameFromFederation = "Federation.status.localCluster"
	NameFromWorkload   = "Workload.status.cluster"
	NameFromContext    = "context"
)

// Report is the merged fleet view. It is what `-o json` and `-o yaml` print.
type Report struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Namespace the Workloads were listed in; empty means all namespaces.
	Namespace string `json:"namespace,omitempty"`
	// Filter holds the workload name patterns given on the command line.
	Filter []string `json:"filter,omitempty"`
	// Timeout is the per-cluster timeout, as a Go duration string.
	Timeout string `json:"timeout"`
	// Clusters has one row per context, in the order the contexts were given.
	Clusters      []ClusterRow    `json:"clusters"`
	Workloads     []WorkloadRow   `json:"workloads"`
	Federations   []FederationRow `json:"federations"`
	Members       []MemberRow     `json:"members"`
	Disagreements []Disagreement  `json:"disagreements"`
	// Notices are informational findings (NoticeFailoverActive) and warnings; they never change
	// the exit code.
	Notices []Notice `json:"notices,omitempty"`
	// Failures are the objects an operator reports as failing in its cluster.
	Failures []Failure `json:"failures,omitempty"`
	Summary  Summary   `json:"summary"`
}

// ClusterRow is one context's outcome.
type ClusterRow struct {
	Context string `json:"context"`
	// Cluster is the name the cluster's operator wrote, or the context name.
	Cluster    string `json:"cluster"`
	NameSource string `json:"nameSource"`
	Server     string `json:"server,omitempty"`
	Reachable  bool   `json:"reachable"`
	// OperatorVersion is status.operatorVersion of the cluster's own ClusterMember (the one its
	// operator reports as local): the version of the operator running there. Empty when the
	// cluster could not be read or its operator reports none.
	OperatorVersion string `json:"operatorVersion,omitempty"`
	// Reason is OK or why the cluster could not be read.
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
	// Warnings are partial failures (for example, Deployments could not be listed).
	Warnings    []string `json:"warnings,omitempty"`
	Workloads   int      `json:"workloads"`
	Federations int      `json:"federations"`
}

// WorkloadRow is one Workload (namespace/name) across all clusters.
type WorkloadRow struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	// Expected is placement.ForWorkload of the spec when every copy holds the same spec.
	Expected []Share `json:"expected,omitempty"`
	// Clusters has one entry per context, in context order.
	Clusters []WorkloadInCluster `json:"clusters"`
	// DesiredTotal and ReadyTotal sum what the reachable clusters report for themselves.
	DesiredTotal int32 `json:"desiredTotal"`
	ReadyTotal   int32 `json:"readyTotal"`
	Ready        bool  `json:"ready"`
	// NotReady says why Ready is false.
	NotReady []string `json:"notReady,omitempty"`
}

// Share is one cluster's replicas.
type Share struct {
	Cluster  string `json:"cluster"`
	Replicas int32  `json:"replicas"`
}

// WorkloadInCluster is one cluster's copy of a Workload.
type WorkloadInCluster struct {
	Context string `json:"context"`
	Cluster string `json:"cluster"`
	// State is Present, Absent (reachable, no copy) or Unknown (cluster not readable).
	State              string `json:"state"`
	Generation         int64  `json:"generation,omitempty"`
	ObservedGeneration int64  `json:"observedGeneration,omitempty"`
	SpecHash           string `json:"specHash,omitempty"`
	// ReportedCluster is status.cluster as the operator wrote it.
	ReportedCluster string `json:"reportedCluster,omitempty"`
	Targeted        bool   `json:"targeted"`
	Desired         int32  `json:"desired"`
	Ready           int32  `json:"ready"`
	Phase           string `json:"phase,omitempty"`
	// Targets is status.targets[] as this cluster computed it: the layout of operators before
	// decision 0013 (empty from later ones, which write a digest instead).
	Targets []Share `json:"targets,omitempty"`
	// AllocationDigest is the digest of the allocation this cluster computed
	// (placement.AllocationDigest): status.allocation.digest, or computed from status.targets
	// when an operator of the previous release wrote the full list, so both layouts compare.
	AllocationDigest string `json:"allocationDigest,omitempty"`
	// AllocationTargets is how many targets that allocation has.
	AllocationTargets int32 `json:"allocationTargets,omitempty"`
	// ResolvedTargets are the targets of this copy's spec resolved over this cluster's roster
	// (placement.ResolveTargets): the explicit targets and those its targetSelectors select. Set
	// only when the spec has targetSelectors (otherwise they are the explicit targets).
	ResolvedTargets []string `json:"resolvedTargets,omitempty"`
	// Expected is placement.ForWorkload of this copy's spec.
	Expected []Share `json:"expected,omitempty"`
	// DeploymentReplicas is spec.replicas of the polykube-managed Deployment, when one exists.
	DeploymentReplicas *int32 `json:"deploymentReplicas,omitempty"`
	// Template is what this cluster reports of its effective template beside the recomputation
	// (merge_overrides.go); set when the copy reports one or has spec.overrides.
	Template *TemplateView `json:"template,omitempty"`
	// Failover is status.failover beside the recomputation (merge_failover.go); set when the
	// copy reports one.
	Failover *FailoverView `json:"failover,omitempty"`
	// Failure is the copy's Ready condition when its operator reports a failure (ReconcileFailed,
	// InvalidSpec, Conflict, ...).
	Failure *Check `json:"failure,omitempty"`
	// Autoscaling is status.autoscaling of an autoscaled Workload: this cluster's HPA bounds and
	// current replicas (Desired is then the current replicas too).
	Autoscaling *Autoscaled `json:"autoscaling,omitempty"`
	// Suspended: this copy has spec.suspend, or its Ready condition says Suspended. Its
	// operator changes nothing for it in this cluster, so its status is frozen, not failing
	// (merge_suspend.go).
	Suspended bool `json:"suspended,omitempty"`
}

// Autoscaled is one cluster's autoscaling as its operator reports it.
type Autoscaled struct {
	MinReplicas     int32 `json:"minReplicas"`
	MaxReplicas     int32 `json:"maxReplicas"`
	CurrentReplicas int32 `json:"currentReplicas"`
}

// Workload copy states.
const (
	StatePresent = "Present"
	StateAbsent  = "Absent"
	StateUnknown = "Unknown"
)

// FederationRow is one Federation across all clusters.
type FederationRow struct {
	Name   string           `json:"name"`
	Copies []FederationCopy `json:"copies"`
}

// FederationCopy is one cluster's copy of a Federation and its mesh checks.
type FederationCopy struct {
	Context      string   `json:"context"`
	Cluster      string   `json:"cluster"`
	State        string   `json:"state"`
	Members      []string `json:"members,omitempty"`
	LocalCluster string   `json:"localCluster,omitempty"`
	Ready        string   `json:"ready,omitempty"`
	Checks       []Check  `json:"checks,omitempty"`
}

// Check is one condition of a status.
type Check struct {
	Type    string `json:"type"`
	Status  string `json:"status"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// MemberRow is one ClusterMember name across all clusters.
type MemberRow struct {
	Name      string `json:"name"`
	Provider  string `json:"provider,omitempty"`
	Region    string `json:"region,omitempty"`
	ClusterID int32  `json:"clusterID,omitempty"`
	// InRoster lists the Federations whose spec.members name it.
	InRoster []string `json:"inRoster,omitempty"`
	// SeenBy lists the clusters that hold a ClusterMember of this name.
	SeenBy []string `json:"seenBy"`
	// LocalContext is the context whose operator reports this member as itself.
	LocalContext string `json:"localContext,omitempty"`
}

// Disagreement is one way the clusters' views differ.
type Disagreement struct {
	Kind string `json:"kind"`
	// Object is "Workload namespace/name", "Federation name", "ClusterMember name" or "Cluster name".
	Object string `json:"object"`
	// Clusters names every cluster involved.
	Clusters []string `json:"clusters"`
	Message  string   `json:"message"`
}

// Notice is one informational finding: not a disagreement, not counted in the exit code.
type Notice struct {
	Kind string `json:"kind"`
	// Level is LevelWarning for a finding that something is probably wrong; empty for information.
	Level    string   `json:"level,omitempty"`
	Object   string   `json:"object"`
	Clusters []string `json:"clusters"`
	Message  string   `json:"message"`
}

// Failure is one object whose operator reports it failing in its cluster.
type Failure struct {
	// Kind is Workload, ServiceEndpoint, DatastoreBinding or ClusterMember.
	Kind string `json:"kind"`
	// Namespace is empty for a ClusterMember.
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Context   string `json:"context"`
	Cluster   string `json:"cluster"`
	// Condition is the condition that says so (Ready; Bound of a DatastoreBinding;
	// OperatorIdentity of a ClusterMember).
	Condition string       `json:"condition"`
	Reason    string       `json:"reason"`
	Message   string       `json:"message,omitempty"`
	Since     *metav1.Time `json:"since,omitempty"`
}

// Summary is the verdict of a Report.
type Summary struct {
	ClustersQueried   int `json:"clustersQueried"`
	ClustersReachable int `json:"clustersReachable"`
	// Unreachable names the contexts that could not be read completely.
	Unreachable   []string `json:"unreachable,omitempty"`
	Disagreements int      `json:"disagreements"`
	// NotReady names the Workloads and Federations that are not ready, and patterns that matched nothing.
	NotReady []string `json:"notReady,omitempty"`
	// Failing names each failure of Report.Failures as "Kind namespace/name in cluster: Reason".
	Failing  []string `json:"failing,omitempty"`
	Healthy  bool     `json:"healthy"`
	ExitCode int      `json:"exitCode"`
}
