package status

import (
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// Per-cluster overrides (decision 0005): each operator renders its effective template from the
// spec and its own ClusterMember and reports status.appliedOverrides and
// status.effectiveTemplateHash. Both are a pure function of what this tool reads, so every
// copy's report is checked against placement.EffectiveTemplate over the ClusterMember its own
// cluster holds.

// TemplateView is one cluster's effective template as it reports it and as it is recomputed.
type TemplateView struct {
	// AppliedOverrides and EffectiveTemplateHash are status.appliedOverrides and
	// status.effectiveTemplateHash as the cluster's operator wrote them.
	AppliedOverrides      []string `json:"appliedOverrides,omitempty"`
	EffectiveTemplateHash string   `json:"effectiveTemplateHash,omitempty"`
	// ExpectedOverrides and ExpectedTemplateHash are placement.EffectiveTemplate of the copy's
	// spec for the cluster's ClusterMember (from its own roster) and placement.TemplateHash of
	// the result; unset when that cluster holds no ClusterMember of its name.
	ExpectedOverrides    []string `json:"expectedOverrides,omitempty"`
	ExpectedTemplateHash string   `json:"expectedTemplateHash,omitempty"`
	// Images are the effective template's container images as container=image, in template
	// order (init containers first), when recomputed.
	Images []string `json:"images,omitempty"`
}

// renderKey names an effective template among the copies of one Workload: the copies of one
// spec group, in clusters of one roster group, for the ClusterMember of one name render the
// same template (EffectiveTemplate reads the spec and the member's name and spec only).
type renderKey struct {
	specGroup, rosterGroup int
	member                 string
}

// renderedTemplate is EffectiveTemplate's result for a renderKey, with its hash and images.
type renderedTemplate struct {
	tmpl    corev1.PodTemplateSpec
	applied []string
	err     error
	hash    string
	images  []string
}

// render is EffectiveTemplate of spec for member, computed once per renderKey of the Workload
// whose row is being built (m.templates is reset for each): 50 clusters holding the same spec
// and roster would otherwise render and hash the same template 50 times.
func (m *merger) render(key renderKey, spec polykubev1alpha1.WorkloadSpec, member *polykubev1alpha1.ClusterMember) renderedTemplate {
	if r, ok := m.templates[key]; ok {
		return r
	}
	var r renderedTemplate
	if r.tmpl, r.applied, r.err = placement.EffectiveTemplate(spec, member); r.err == nil {
		r.hash = placement.TemplateHash(r.tmpl)
		r.images = ContainerImages(r.tmpl.Spec)
	}
	if m.templates == nil {
		m.templates = map[renderKey]renderedTemplate{}
	}
	m.templates[key] = r
	return r
}

// checkTemplate recomputes the effective template of the copy w in snapshot i (of spec group
// specGroup), records it in cell and flags a report that differs from it. dep is that
// cluster's polykube-managed Deployment of the Workload (nil: none read).
func (m *merger) checkTemplate(object string, i, specGroup int, w *polykubev1alpha1.Workload, dep *appsv1.Deployment, cell *WorkloadInCluster) {
	st := &w.Status
	name := m.names[i]
	if st.Cluster == "" || (st.EffectiveTemplateHash == "" && len(w.Spec.Overrides) == 0) {
		// No status yet, or nothing rendered and nothing to render differently per cluster.
		return
	}
	view := &TemplateView{AppliedOverrides: st.AppliedOverrides, EffectiveTemplateHash: st.EffectiveTemplateHash}
	if cell.Targeted || st.EffectiveTemplateHash != "" {
		cell.Template = view
	}

	member := memberNamed(m.snaps[i].ClusterMembers, st.Cluster)
	if member == nil && len(w.Spec.Overrides) > 0 {
		// The operator creates nothing without its ClusterMember (Ready=False, ClusterUnknown);
		// only the spec can still be checked. EffectiveTemplate checks every override before it
		// looks at the member, so any member serves to find a spec error.
		if _, _, err := placement.EffectiveTemplate(w.Spec, &polykubev1alpha1.ClusterMember{}); err != nil {
			m.flag(DisagreeInvalidSpec, object, []string{name}, "the copy in %s cannot be rendered: %v; fix the manifest in Git", name, err)
		}
		return
	}
	r := m.render(renderKey{specGroup: specGroup, rosterGroup: m.rosterGroup(i), member: st.Cluster}, w.Spec, member)
	tmpl, applied, err := r.tmpl, r.applied, r.err
	if err != nil {
		m.flag(DisagreeInvalidSpec, object, []string{name}, "the copy in %s cannot be rendered: %v; fix the manifest in Git", name, err)
		return
	}
	view.ExpectedOverrides = applied
	view.ExpectedTemplateHash = r.hash
	view.Images = r.images

	if st.ObservedGeneration != w.Generation {
		// A status behind its spec is reported as not ready; comparing it would say the same twice.
		return
	}
	switch {
	case st.EffectiveTemplateHash == "":
		if len(w.Spec.Overrides) > 0 && cell.Targeted && st.Phase != "" {
			m.flag(DisagreeTemplate, object, []string{name},
				"%s runs its slice (phase %s) but reports no status.effectiveTemplateHash, and overrides %s select it: its operator predates spec.overrides and runs spec.template without them; upgrade the operator in %s",
				name, st.Phase, overrideList(applied), name)
		}
		return
	case st.EffectiveTemplateHash != view.ExpectedTemplateHash || !slices.Equal(st.AppliedOverrides, applied):
		why := "the operator in " + name + " renders templates differently (version skew?)"
		if !slices.Equal(st.AppliedOverrides, applied) {
			why = "its ClusterMember " + st.Cluster + " changed since the operator's last reconcile, or the operator in " + name + " selects overrides differently (version skew?)"
		}
		m.flag(DisagreeTemplate, object, []string{name},
			"%s reports overrides %s and effectiveTemplateHash %s, but rendering its spec for its ClusterMember %s gives overrides %s and %s: %s",
			name, overrideList(st.AppliedOverrides), st.EffectiveTemplateHash, st.Cluster, overrideList(applied), view.ExpectedTemplateHash, why)
		return
	}
	m.checkDeploymentImages(object, name, st.Cluster, tmpl, dep)
}

// checkDeploymentImages compares the images of the operator's Deployment with the effective
// template it reports to run. The images are the one part of the pod template that neither the
// API server's defaulting nor the operator's own additions (the selector label, the
// DatastoreBinding env vars) change, so they can be compared without a cluster's Secrets.
// A Deployment labelled for another cluster is not this operator's and is left to the
// operator's own IdentityMismatch report.
func (m *merger) checkDeploymentImages(object, name, cluster string, tmpl corev1.PodTemplateSpec, dep *appsv1.Deployment) {
	if dep == nil || dep.Labels[polykubev1alpha1.ClusterLabel] != cluster {
		return
	}
	running := map[string]string{}
	for _, c := range slices.Concat(dep.Spec.Template.Spec.InitContainers, dep.Spec.Template.Spec.Containers) {
		running[c.Name] = c.Image
	}
	var differ []string
	for _, c := range slices.Concat(tmpl.Spec.InitContainers, tmpl.Spec.Containers) {
		switch have, ok := running[c.Name]; {
		case !ok:
			differ = append(differ, fmt.Sprintf("it has no container %s (%s)", c.Name, c.Image))
		case have != c.Image:
			differ = append(differ, fmt.Sprintf("container %s runs %s, not %s", c.Name, have, c.Image))
		}
	}
	if len(differ) == 0 {
		return
	}
	m.flag(DisagreeTemplate, object, []string{name},
		"Deployment %s/%s in %s does not run its effective template: %s. It was changed outside the operator, which sets the images back at its next reconcile: if this stays, check that the operator in that cluster runs (and is at least the version that reverts image edits)",
		dep.Namespace, dep.Name, name, strings.Join(differ, "; "))
}

// ContainerImages lists the images of a pod spec as container=image, init containers first.
func ContainerImages(ps corev1.PodSpec) []string {
	out := make([]string, 0, len(ps.InitContainers)+len(ps.Containers))
	for _, c := range ps.InitContainers {
		out = append(out, c.Name+"="+c.Image)
	}
	for _, c := range ps.Containers {
		out = append(out, c.Name+"="+c.Image)
	}
	return out
}

// memberNamed is the ClusterMember of that name, as the operator gets it (one being deleted too).
func memberNamed(roster []polykubev1alpha1.ClusterMember, name string) *polykubev1alpha1.ClusterMember {
	for i := range roster {
		if roster[i].Name == name {
			return &roster[i]
		}
	}
	return nil
}

func overrideList(names []string) string {
	return "[" + strings.Join(names, " ") + "]"
}

// deploymentAt is deps[i], or nil when no Deployment of the Workload was read.
func deploymentAt(deps []*appsv1.Deployment, i int) *appsv1.Deployment {
	if deps == nil {
		return nil
	}
	return deps[i]
}
