package v1alpha1

// Condition types. All have positive polarity: Status=True is the healthy state.
const (
	// ReadyCondition summarizes the object: True when everything this cluster is responsible
	// for is in place and healthy.
	ReadyCondition = "Ready"

	// AllocatedCondition (Workload) is True when this cluster computed an allocation for the
	// Workload from its spec.
	AllocatedCondition = "Allocated"

	// ClusterIdentifiedCondition (Federation) is True when the operator found the
	// ClusterMember named by its --cluster-name.
	ClusterIdentifiedCondition = "ClusterIdentified"

	// MembersPresentCondition (Federation) is True when every member of the roster has a
	// ClusterMember object in this cluster.
	MembersPresentCondition = "MembersPresent"

	// ClusterIDsValidCondition (Federation) is True when every member's cluster ID is unique and
	// within the range allowed by maxConnectedClusters.
	ClusterIDsValidCondition = "ClusterIDsValid"

	// ClusterNamesValidCondition (Federation) is True when every member name is DNS-safe and at
	// most 32 characters, as Cilium ClusterMesh requires.
	ClusterNamesValidCondition = "ClusterNamesValid"

	// PodCIDRsDisjointCondition (Federation) is True when no two members' pod CIDRs overlap.
	PodCIDRsDisjointCondition = "PodCIDRsDisjoint"

	// OverlayEndpointsUniqueCondition (Federation) is True when no two members that use an
	// overlay (spec.network.type other than none) publish the same spec.network.endpoint: a
	// WireGuard peer is keyed by its endpoint's traffic, so two members behind one endpoint
	// cannot both be reached.
	OverlayEndpointsUniqueCondition = "OverlayEndpointsUnique"

	// LocalMemberListedCondition (Federation) is True when the local cluster is in the roster.
	LocalMemberListedCondition = "LocalMemberListed"

	// BoundCondition (DatastoreBinding) is True when the local Secret and every key it needs
	// exist and the env vars are wired into the workload.
	BoundCondition = "Bound"

	// EnvVarsUniqueCondition (Workload) is True when no two DatastoreBindings of the Workload map
	// the same env var into the same container (reason Succeeded, or TemplateEnvReplaced when a
	// binding replaces an env var of the template); False/EnvConflict names the colliding
	// bindings and the one that keeps each variable (the one established first).
	EnvVarsUniqueCondition = "EnvVarsUnique"

	// OperatorIdentityCondition (ClusterMember) is True on the member this cluster is pinned to
	// when its operator started as that member (reason IdentityPinned); False/IdentityMismatch
	// when an operator started in this cluster with another --cluster-name (or with a pin copied
	// from another cluster) and refused to run: the message says what to fix.
	OperatorIdentityCondition = "OperatorIdentity"

	// FailoverReadyCondition (Workload, only with spec.distribution.failover) is True when this
	// cluster can see its peers through the mesh: a global ServiceEndpoint that is not in
	// Conflict exposes the Workload and Cilium mirrors at least one peer target's EndpointSlices
	// for its Service (reason FailoverActive while a peer's deficit is absorbed, else
	// Succeeded). False with ServiceEndpointMissing or NoMeshView: without a view the cluster
	// absorbs no new deficit and holds what it had absorbed (its base share when nothing was).
	FailoverReadyCondition = "FailoverReady"
)

// Condition reasons, shared by all kinds. Event reasons equal condition reasons.
const (
	// Generic.
	ReasonSucceeded         = "Succeeded"
	ReasonProgressing       = "Progressing"
	ReasonInvalidSpec       = "InvalidSpec"
	ReasonConflict          = "Conflict"
	ReasonClusterUnknown    = "ClusterUnknown"
	ReasonReconcileFailed   = "ReconcileFailed"
	ReasonWorkloadNotFound  = "WorkloadNotFound"
	ReasonNotTargeted       = "NotTargeted"
	ReasonDeploymentPending = "DeploymentPending"
	ReasonDegraded          = "Degraded"
	// ReasonNoTargets (Workload, Allocated and Ready): distribution.targetSelectors select no
	// ClusterMember of the roster and there are no explicit targets. The roster may still be
	// arriving, so the operator changes nothing it runs and waits for a ClusterMember.
	ReasonNoTargets = "NoTargets"

	// Federation.
	ReasonMemberMissing        = "MemberMissing"
	ReasonDuplicateClusterID   = "DuplicateClusterID"
	ReasonClusterIDOutOfRange  = "ClusterIDOutOfRange"
	ReasonInvalidClusterName   = "InvalidClusterName"
	ReasonPodCIDROverlap       = "PodCIDROverlap"
	ReasonDuplicateEndpoint    = "DuplicateOverlayEndpoint"
	ReasonLocalMemberMissing   = "LocalMemberMissing"
	ReasonClusterMemberMissing = "ClusterMemberMissing"

	// DatastoreBinding.
	ReasonSecretNotFound   = "SecretNotFound"
	ReasonSecretKeyMissing = "SecretKeyMissing"
	// ReasonEnvConflict: another DatastoreBinding, established earlier, maps the same env var
	// into the same container and keeps it.
	ReasonEnvConflict = "EnvConflict"

	// Identity (ClusterMember, Workload): an operator pinned to its cluster, one refusing to act
	// as another member, and objects labelled for another cluster that are left untouched.
	ReasonIdentityPinned   = "IdentityPinned"
	ReasonIdentityMismatch = "IdentityMismatch"
	// ReasonTakenOver (event, Workload): a Workload took over the Deployment or Service that
	// Polykube created in this cluster for an earlier Workload of the same name.
	ReasonTakenOver = "TakenOver"
	// ReasonTemplateEnvReplaced: a binding's env var replaces one of the Workload's template.
	ReasonTemplateEnvReplaced = "TemplateEnvReplaced"

	// Failover (Workload, decision 0006).
	// ReasonFailoverActive: this cluster's view shows a peer's deficit for detectAfter and the
	// Deployment runs extra replicas for it (or would, within maxSurge).
	ReasonFailoverActive = "FailoverActive"
	// ReasonServiceEndpointMissing: failover is set but no global ServiceEndpoint that is not
	// in Conflict exposes the Workload, so there is no Service whose mirrored EndpointSlices
	// would show the peers (the message names the ones passed over). Like NoMeshView, the
	// cluster absorbs nothing new and holds what it had absorbed.
	ReasonServiceEndpointMissing = "ServiceEndpointMissing"
	// ReasonNoMeshView: the Workload's Service has no EndpointSlice mirrored from any peer
	// target: Cilium's endpoint-slice synchronisation is off, Cilium's cluster.name differs from
	// the ClusterMember names (the message names the sources that are no target), no peer is
	// targeted, or every peer is gone from the mesh. This cluster cannot tell these apart, so it
	// absorbs no new deficit and holds what it had absorbed, until a peer is seen again; it
	// never counts every peer as down (that made every cluster of the fleet surge at once).
	ReasonNoMeshView = "NoMeshView"
	// ReasonFailoverStarted (event): this cluster started absorbing a peer's deficit.
	ReasonFailoverStarted = "FailoverStarted"
	// ReasonFailoverEnded (event): every peer's deficit ended and the extra replicas are given back.
	ReasonFailoverEnded = "FailoverEnded"
	// ReasonHandoverStarted (event): the roster grew and this cluster keeps its previous share
	// until the peer targets serve theirs (decision 0011).
	ReasonHandoverStarted = "HandoverStarted"
	// ReasonHandoverEnded (event): the peer targets serve their share, or the handover timed out.
	ReasonHandoverEnded = "HandoverEnded"

	// ReasonSuspended (Ready=Unknown on Workload, ServiceEndpoint, DatastoreBinding): spec.suspend
	// is true; the operator changes nothing for the object in this cluster until it is false.
	ReasonSuspended = "Suspended"
)

// ReconcileRequestedAtAnnotation asks the operator to reconcile an object now (as Flux's
// reconcile.fluxcd.io/requestedAt): any new value, conventionally the current time, triggers a
// reconcile, and status.lastHandledReconcileAt echoes the value once it ran.
const ReconcileRequestedAtAnnotation = "reconcile.polykube.kismet.io/requestedAt"

// Labels and annotations the operator writes.
const (
	// ManagedByLabel marks every object the operator creates; its value is ManagedByValue.
	ManagedByLabel = "app.kubernetes.io/managed-by"
	// ManagedByValue is the value of ManagedByLabel on objects Polykube created.
	ManagedByValue = "polykube"
	// WorkloadNameLabel names the Workload an object belongs to; it is also the pod selector.
	WorkloadNameLabel = "polykube.kismet.io/workload"
	// ServiceEndpointNameLabel names the ServiceEndpoint that owns a Service.
	ServiceEndpointNameLabel = "polykube.kismet.io/service-endpoint"
	// ClusterLabel names the cluster whose operator created the object.
	ClusterLabel = "polykube.kismet.io/cluster"
)

// Well-known keys of a ClusterMember that a Workload override's labelSelector sees besides the
// member's spec.labels (decision 0005). They are derived from the member's spec and win over a
// free-form label of the same key. ClusterLabel carries the member's name.
const (
	// ProviderLabel carries spec.provider (aws, gcp, azure, onprem, ...).
	ProviderLabel = "polykube.kismet.io/provider"
	// RegionLabel carries spec.region, when set.
	RegionLabel = "polykube.kismet.io/region"
	// ZoneLabel carries spec.zone, when set.
	ZoneLabel = "polykube.kismet.io/zone"
)

// Workload phases reported for the local target.
const (
	PhasePending     = "Pending"
	PhaseProgressing = "Progressing"
	PhaseReady       = "Ready"
	PhaseDegraded    = "Degraded"
)

// Conditions and reasons of issue 33 ("nothing lost, round two"), kept together.
const (
	// SecretsReadableCondition (Workload, only with DatastoreBindings) is True when this
	// cluster could read the Secret of every DatastoreBinding of the Workload (whether or not it
	// has the keys, which the binding reports); False/SecretUnreadable names each binding whose
	// read failed and why. A binding that cannot be read wires nothing new, keeps what it wired
	// before, and stops none of the Workload's other work.
	SecretsReadableCondition = "SecretsReadable"

	// TargetsKnownCondition (Workload, only with spec.distribution.targets) is True when every
	// cluster the targets name has a ClusterMember in this cluster's roster; False/UnknownTargets
	// names the ones that have none (a typo in a clusterRef, or a member not delivered yet):
	// their replicas run nowhere.
	TargetsKnownCondition = "TargetsKnown"

	// ReasonClusterMemberTerminating (Workload Ready): this cluster's own ClusterMember is being
	// deleted (a finalizer holds it, or a foreground deletion waits). While it is, the Workload
	// creates, changes and deletes nothing in this cluster, as when the member is absent
	// (ClusterUnknown): a roster that loses this cluster by mistake must not delete what runs.
	ReasonClusterMemberTerminating = "ClusterMemberTerminating"
	// ReasonSecretUnreadable (DatastoreBinding Bound, Workload SecretsReadable): the binding's
	// Secret could not be read (Forbidden, or another API error); the message says which error.
	ReasonSecretUnreadable = "SecretUnreadable"
	// ReasonForeignHPA (Workload Ready): a HorizontalPodAutoscaler that Polykube did not make
	// (kubectl autoscale, KEDA) scales the Workload's Deployment. The operator leaves the
	// Deployment's replicas to it and says so; the message names the HPA and what to do.
	ReasonForeignHPA = "ForeignHPA"
	// ReasonUnknownTargets (Workload TargetsKnown): spec.distribution.targets names clusters no
	// ClusterMember of the roster is named after (a typo, or a member not delivered yet).
	// Nothing runs for them; every other target gets its share.
	ReasonUnknownTargets = "UnknownTargets"
)
