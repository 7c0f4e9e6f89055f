package plan

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/placement"
)

// RenderedDeployment is the Deployment the operator of PlanReport.Cluster runs for a Workload:
// its effective template (spec.template with the overrides that select the cluster) and its
// replicas.
type RenderedDeployment struct {
	// AppliedOverrides are the spec.overrides that select the cluster, in the order applied
	// (what its operator writes to status.appliedOverrides).
	AppliedOverrides []string `json:"appliedOverrides,omitempty"`
	// EffectiveTemplateHash is placement.TemplateHash of the effective template (what its
	// operator writes to status.effectiveTemplateHash).
	EffectiveTemplateHash string `json:"effectiveTemplateHash"`
	// Images are the effective template's images as container=image, init containers first.
	Images []string `json:"images"`
	// Replicas is the Deployment's spec.replicas: the cluster's share, plus its extra under
	// --assume-down when the Workload fails over.
	Replicas int32 `json:"replicas"`
	// Object is the Deployment, as far as the manifests determine it.
	Object *appsv1.Deployment `json:"object"`
}

// renderFor is renderDeployment for cluster with its ClusterMember from roster, or why it cannot be.
func renderFor(w *polykubev1alpha1.Workload, roster []polykubev1alpha1.ClusterMember, cluster string, replicas int32) (*RenderedDeployment, string) {
	member := memberNamed(roster, cluster)
	if member == nil && len(w.Spec.Overrides) > 0 {
		return nil, fmt.Sprintf("no ClusterMember named %s in the paths read, and the overrides select on it: add the roster's manifests (-f) to render its Deployment", cluster)
	}
	d, err := renderDeployment(w, member, cluster, replicas)
	if err != nil {
		return nil, err.Error()
	}
	return d, ""
}

// renderDeployment renders the Deployment the operator of cluster runs for w, from member (its
// ClusterMember; nil when the manifests hold none, which only a Workload without overrides
// can be rendered without).
//
// The operator and this CLI build the Deployment with the same function, placement.Deployment
// (the contract of decision 0004): the operator then adds what only its cluster knows (the env
// vars DatastoreBindings inject from local Secrets, the owner reference to the Workload's UID,
// its template-hash annotation, a hash over those env vars too), which this leaves out, as it
// leaves out the API server's defaults.
func renderDeployment(w *polykubev1alpha1.Workload, member *polykubev1alpha1.ClusterMember, cluster string, replicas int32) (*RenderedDeployment, error) {
	tmpl, applied, err := placement.EffectiveTemplate(w.Spec, member)
	if err != nil {
		return nil, err
	}
	out := &RenderedDeployment{AppliedOverrides: applied, EffectiveTemplateHash: placement.TemplateHash(tmpl),
		Images: status.ContainerImages(tmpl.Spec), Replicas: replicas}

	out.Object = placement.Deployment(w, tmpl, cluster, replicas)
	return out, nil
}

// renderService renders the Service the operator of cluster runs for w (nil when w declares
// no ports) with the operator's function, placement.Service; the operator adds the owner
// reference to the Workload's UID and the hash of the spec it wrote, which this leaves out.
func renderService(w *polykubev1alpha1.Workload, cluster string) *corev1.Service {
	return placement.Service(w, cluster)
}

// memberNamed is the ClusterMember of that name in the roster, or nil.
func memberNamed(roster []polykubev1alpha1.ClusterMember, name string) *polykubev1alpha1.ClusterMember {
	for i := range roster {
		if roster[i].Name == name {
			return &roster[i]
		}
	}
	return nil
}

// checkOverrides returns the error every operator reports for the spec's overrides (they
// depend on the spec alone), or nil. EffectiveTemplate checks every override before it looks
// at the member, so any member serves.
func checkOverrides(w *polykubev1alpha1.Workload) error {
	if len(w.Spec.Overrides) == 0 {
		return nil
	}
	if _, _, err := placement.EffectiveTemplate(w.Spec, &polykubev1alpha1.ClusterMember{}); err != nil {
		return fmt.Errorf("%w: fix the Workload (every operator reports Ready=False, reason InvalidSpec, and leaves what runs as it is)", err)
	}
	return nil
}
