package workload

import (
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/reconcilers/datastorebinding"
)

// envCondition is the Workload's EnvVarsUnique condition for its bindings over the containers of
// its effective template (this cluster's overrides may set or remove env vars); ok is false when it
// has none (the condition is then not shown). Two bindings mapping one variable into one
// container: False/EnvConflict naming both and the one that keeps it (established first). A
// binding replacing an env var of the template is no conflict (the binding is there to supply
// it) but is said: True/TemplateEnvReplaced.
func envCondition(containers []corev1.Container, bindings []binding) (status metav1.ConditionStatus, reason, msg string, ok bool) {
	if len(bindings) == 0 {
		return "", "", "", false
	}
	list := make([]polykubev1alpha1.DatastoreBinding, 0, len(bindings))
	for _, b := range bindings {
		list = append(list, *b.DatastoreBinding)
	}
	if cs := datastorebinding.Collisions(list, containers); len(cs) > 0 {
		return metav1.ConditionFalse, polykubev1alpha1.ReasonEnvConflict, datastorebinding.DescribeCollisions(cs) +
			"; the later binding's mapping is not applied: rename the variable in it (spec.prefix or spec.env[].name) or delete it", true
	}
	if replaced := templateEnvReplaced(containers, bindings); len(replaced) > 0 {
		return metav1.ConditionTrue, polykubev1alpha1.ReasonTemplateEnvReplaced,
			"the template's env vars " + strings.Join(replaced, ", ") +
				" are replaced by DatastoreBindings (a binding's variable takes precedence over the template's); remove them from the template to silence this", true
	}
	return metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded, "no two DatastoreBindings map the same env var into a container", true
}

// templateEnvReplaced lists "VAR in container C (DatastoreBinding B)" for every template env
// var a binding replaces.
func templateEnvReplaced(containers []corev1.Container, bindings []binding) []string {
	var out []string
	for _, c := range containers {
		for _, b := range bindings {
			if !datastorebinding.AppliesTo(b.DatastoreBinding, c.Name) {
				continue
			}
			for _, name := range datastorebinding.EnvNames(b.DatastoreBinding) {
				if slices.ContainsFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == name }) {
					out = append(out, fmt.Sprintf("%s in container %s (DatastoreBinding %s)", name, c.Name, b.Name))
				}
			}
		}
	}
	return out
}
