package testbed

// Health is the state of one component.
type Health struct {
	OK     bool   `json:"ok"`
	Detail string `json:"detail,omitempty"`
}

// Report is the health of a run, collected without printing.
type Report struct {
	Run      string  `json:"run"`
	Dir      string  `json:"dir"`
	Provider string  `json:"provider"`
	Git      *Health `json:"git,omitempty"`
	Revision string  `json:"revision,omitempty"`
	// MeshMirror is the mesh-mirror add-on's health, when the run has it.
	MeshMirror *Health         `json:"meshMirror,omitempty"`
	Clusters   []ClusterReport `json:"clusters"`
}

// ClusterReport is the health of one cluster and its add-ons.
type ClusterReport struct {
	Name       string  `json:"name"`
	Context    string  `json:"context"`
	Kubeconfig string  `json:"kubeconfig"`
	APIServer  Health  `json:"apiServer"`
	Flux       *Health `json:"flux,omitempty"`
	ArgoCD     *Health `json:"argocd,omitempty"`
	Operator   *Health `json:"operator,omitempty"`
}

// Healthy reports whether every component of the report is OK.
func (r *Report) Healthy() bool {
	if (r.Git != nil && !r.Git.OK) || (r.MeshMirror != nil && !r.MeshMirror.OK) {
		return false
	}
	for _, c := range r.Clusters {
		if !c.APIServer.OK || (c.Flux != nil && !c.Flux.OK) || (c.ArgoCD != nil && !c.ArgoCD.OK) || (c.Operator != nil && !c.Operator.OK) {
			return false
		}
	}
	return true
}
