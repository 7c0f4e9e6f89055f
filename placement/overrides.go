package placement

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// ErrInvalidOverride is wrapped by every error EffectiveTemplate returns: the spec's overrides
// cannot be rendered. It depends on the spec alone, so every cluster reports the same error.
var ErrInvalidOverride = errors.New("invalid override")

// MemberLabels are the labels a Workload override's labelSelector sees for member: its
// spec.labels plus the well-known keys polykube.kismet.io/cluster (the member's name),
// polykube.kismet.io/provider, polykube.kismet.io/region and polykube.kismet.io/zone (the last
// two only when set), which win over a free-form label of the same key (decision 0005).
func MemberLabels(member *polykubev1alpha1.ClusterMember) labels.Set {
	set := make(labels.Set, len(member.Spec.Labels)+4)
	maps.Copy(set, member.Spec.Labels)
	set[polykubev1alpha1.ClusterLabel] = member.Name
	set[polykubev1alpha1.ProviderLabel] = member.Spec.Provider
	delete(set, polykubev1alpha1.RegionLabel)
	delete(set, polykubev1alpha1.ZoneLabel)
	if member.Spec.Region != "" {
		set[polykubev1alpha1.RegionLabel] = member.Spec.Region
	}
	if member.Spec.Zone != "" {
		set[polykubev1alpha1.ZoneLabel] = member.Spec.Zone
	}
	return set
}

// EffectiveTemplate renders the pod template the cluster of member runs for a Workload:
// spec.template with every override that selects member applied, in list order (a later
// override wins on the same field). applied names those overrides, in that order.
//
// It is a pure function of its arguments and never modifies them; the template it returns
// shares no memory with spec. Every error wraps ErrInvalidOverride, names the override and
// depends on the spec alone: every override is checked, whether or not it selects member, so
// that every cluster reports the same error for the same spec. member may be nil only when the
// spec has no overrides.
func EffectiveTemplate(spec polykubev1alpha1.WorkloadSpec, member *polykubev1alpha1.ClusterMember) (
	tmpl corev1.PodTemplateSpec, applied []string, err error) {
	selectors, err := checkOverrides(spec)
	if err != nil {
		return corev1.PodTemplateSpec{}, nil, err
	}
	tmpl = *spec.Template.DeepCopy()
	if len(spec.Overrides) == 0 {
		return tmpl, nil, nil
	}
	if member == nil {
		return corev1.PodTemplateSpec{}, nil, fmt.Errorf("%w: the Workload has overrides and there is no ClusterMember to select with", ErrInvalidOverride)
	}
	memberLabels := MemberLabels(member)
	for i := range spec.Overrides {
		o := &spec.Overrides[i]
		if !selects(o.ClusterSelector, selectors[i], member.Name, memberLabels) {
			continue
		}
		applyOverride(&tmpl, o)
		applied = append(applied, o.Name)
	}
	return tmpl, applied, nil
}

// TemplateHash is a stable hash of a pod template, computed like SpecHash. Every operator writes
// the hash of its effective template to status.effectiveTemplateHash, so it is part of the
// contract between the operator and polykube-status.
func TemplateHash(tmpl corev1.PodTemplateSpec) string {
	return hashJSON("template hash", tmpl)
}

// checkOverrides checks what the API server's validation cannot (or what a spec that bypassed
// it might lack) and returns the parsed label selector of each override (nil when it has none).
func checkOverrides(spec polykubev1alpha1.WorkloadSpec) ([]labels.Selector, error) {
	selectors := make([]labels.Selector, len(spec.Overrides))
	seen := make(map[string]int, len(spec.Overrides))
	for i := range spec.Overrides {
		o := &spec.Overrides[i]
		where := fmt.Sprintf("spec.overrides[%d] %q", i, o.Name)
		if o.Name == "" {
			return nil, fmt.Errorf("%w: %s: name is empty", ErrInvalidOverride, where)
		}
		if j, ok := seen[o.Name]; ok {
			return nil, fmt.Errorf("%w: %s: the name is already used by spec.overrides[%d]", ErrInvalidOverride, where, j)
		}
		seen[o.Name] = i
		cs := o.ClusterSelector
		if len(cs.ClusterNames) == 0 && cs.LabelSelector == nil {
			return nil, fmt.Errorf("%w: %s: clusterSelector: set clusterNames, labelSelector or both", ErrInvalidOverride, where)
		}
		if cs.LabelSelector != nil {
			sel, err := metav1.LabelSelectorAsSelector(cs.LabelSelector)
			if err != nil {
				return nil, fmt.Errorf("%w: %s: clusterSelector.labelSelector: %v", ErrInvalidOverride, where, err)
			}
			selectors[i] = sel
		}
		for k, im := range o.Images {
			c := findContainer(&spec.Template.Spec, im.Container)
			if c == nil {
				return nil, fmt.Errorf("%w: %s: images[%d]: the template has no container %q", ErrInvalidOverride, where, k, im.Container)
			}
			if im.Registry == "" && im.Repository == "" && im.Tag == "" {
				return nil, fmt.Errorf("%w: %s: images[%d]: set at least one of registry, repository or tag", ErrInvalidOverride, where, k)
			}
			if c.Image == "" && im.Repository == "" {
				return nil, fmt.Errorf("%w: %s: images[%d]: container %q has no image in the template; set repository too", ErrInvalidOverride, where, k, im.Container)
			}
		}
		for k, e := range o.Env {
			if findContainer(&spec.Template.Spec, e.Container) == nil {
				return nil, fmt.Errorf("%w: %s: env[%d]: the template has no container %q", ErrInvalidOverride, where, k, e.Container)
			}
		}
		for k, r := range o.Resources {
			if findContainer(&spec.Template.Spec, r.Container) == nil {
				return nil, fmt.Errorf("%w: %s: resources[%d]: the template has no container %q", ErrInvalidOverride, where, k, r.Container)
			}
		}
		if _, ok := o.PodLabels[polykubev1alpha1.WorkloadNameLabel]; ok {
			return nil, fmt.Errorf("%w: %s: podLabels cannot set %s: it is the pod selector the operator sets", ErrInvalidOverride, where, polykubev1alpha1.WorkloadNameLabel)
		}
	}
	return selectors, nil
}

// selects reports whether a cluster selector (with its parsed label selector, nil when it has
// none) selects the cluster named name with the given labels: both parts must hold when both
// are set.
func selects(cs polykubev1alpha1.ClusterSelector, sel labels.Selector, name string, set labels.Set) bool {
	if len(cs.ClusterNames) > 0 && !slices.Contains(cs.ClusterNames, name) {
		return false
	}
	return sel == nil || sel.Matches(set)
}

// applyOverride applies one override to tmpl, which checkOverrides validated it against.
// Everything taken from o is deep-copied, so tmpl never shares memory with the spec.
func applyOverride(tmpl *corev1.PodTemplateSpec, o *polykubev1alpha1.WorkloadOverride) {
	ps := &tmpl.Spec
	for _, im := range o.Images {
		c := findContainer(ps, im.Container)
		c.Image = overrideImage(c.Image, im)
	}
	for _, e := range o.Env {
		c := findContainer(ps, e.Container)
		c.Env = slices.DeleteFunc(c.Env, func(v corev1.EnvVar) bool { return slices.Contains(e.Remove, v.Name) })
		for _, v := range e.Set {
			c.Env = setEnvVar(c.Env, *v.DeepCopy())
		}
		if len(c.Env) == 0 {
			c.Env = nil
		}
	}
	for _, r := range o.Resources {
		c := findContainer(ps, r.Container)
		c.Resources.Requests = mergeResources(c.Resources.Requests, r.Requests)
		c.Resources.Limits = mergeResources(c.Resources.Limits, r.Limits)
	}
	ps.NodeSelector = mergeStrings(ps.NodeSelector, o.NodeSelector)
	for _, t := range o.Tolerations {
		if !slices.ContainsFunc(ps.Tolerations, func(have corev1.Toleration) bool { return equality.Semantic.DeepEqual(have, t) }) {
			ps.Tolerations = append(ps.Tolerations, *t.DeepCopy())
		}
	}
	tmpl.Labels = mergeStrings(tmpl.Labels, o.PodLabels)
	tmpl.Annotations = mergeStrings(tmpl.Annotations, o.PodAnnotations)
}

// findContainer returns the container, or else the init container, of that name.
func findContainer(ps *corev1.PodSpec, name string) *corev1.Container {
	for i := range ps.Containers {
		if ps.Containers[i].Name == name {
			return &ps.Containers[i]
		}
	}
	for i := range ps.InitContainers {
		if ps.InitContainers[i].Name == name {
			return &ps.InitContainers[i]
		}
	}
	return nil
}

// setEnvVar replaces the env var of v's name in place, or appends v.
func setEnvVar(env []corev1.EnvVar, v corev1.EnvVar) []corev1.EnvVar {
	for i := range env {
		if env[i].Name == v.Name {
			env[i] = v
			return env
		}
	}
	return append(env, v)
}

func mergeResources(dst, src corev1.ResourceList) corev1.ResourceList {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(corev1.ResourceList, len(src))
	}
	for name, q := range src {
		dst[name] = q.DeepCopy()
	}
	return dst
}

func mergeStrings(dst, src map[string]string) map[string]string {
	if len(src) == 0 {
		return dst
	}
	if dst == nil {
		dst = make(map[string]string, len(src))
	}
	maps.Copy(dst, src)
	return dst
}

// imageRef is an image reference split as [registry/]repository[:tag][@digest].
type imageRef struct {
	Registry, Repository, Tag, Digest string
}

// parseImage splits an image reference. The first path component is the registry when it
// contains a '.' or a ':' (a port), is localhost, or has an upper-case letter, as in the Docker
// reference grammar; otherwise the reference has no registry. It never fails: a malformed
// reference is split as far as it goes, and the kubelet reports it as it would have anyway.
func parseImage(s string) imageRef {
	var r imageRef
	rest := s
	if i := strings.IndexByte(rest, '@'); i >= 0 {
		rest, r.Digest = rest[:i], rest[i+1:]
	}
	if i := strings.IndexByte(rest, '/'); i >= 0 {
		if first := rest[:i]; strings.ContainsAny(first, ".:") || first == "localhost" || strings.ToLower(first) != first {
			r.Registry, rest = first, rest[i+1:]
		}
	}
	// With the registry (and its port) gone, a ':' can only start the tag.
	if i := strings.LastIndexByte(rest, ':'); i >= 0 {
		rest, r.Tag = rest[:i], rest[i+1:]
	}
	r.Repository = rest
	return r
}

// String joins the parts back into a reference.
func (r imageRef) String() string {
	s := r.Repository
	if r.Registry != "" {
		s = r.Registry + "/" + s
	}
	if r.Tag != "" {
		s += ":" + r.Tag
	}
	if r.Digest != "" {
		s += "@" + r.Digest
	}
	return s
}

// overrideImage applies an image override to a reference. A new registry or repository keeps
// the digest (a mirror serves the same content under the same digest); a new tag drops it,
// because an image with a digest ignores its tag.
func overrideImage(image string, o polykubev1alpha1.ImageOverride) string {
	r := parseImage(image)
	if o.Registry != "" {
		r.Registry = o.Registry
	}
	if o.Repository != "" {
		r.Repository = o.Repository
	}
	if o.Tag != "" {
		r.Tag, r.Digest = o.Tag, ""
	}
	return r.String()
}
