package datastorebinding

import (
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// establishedBefore orders bindings by when they were established: creationTimestamp, then
// UID (creationTimestamp has a resolution of one second), then name. Neither the list order nor
// the names' sort order decides which binding keeps a variable, and a binding added later by
// mistake never takes a variable from one a Workload already runs with.
func establishedBefore(a, b *polykubev1alpha1.DatastoreBinding) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	if a.UID != b.UID {
		return a.UID < b.UID
	}
	return a.Name < b.Name
}

// Collision is an env var that two bindings map into the same container: Winner (established
// first) keeps it; Loser's mapping is not applied.
type Collision struct {
	Container, Var, Winner, Loser string
}

// Collisions lists, for the bindings of one Workload and its template's containers, every env
// var mapped into a container by more than one binding, in a stable order (loser, var,
// container). Each binding that applies to a container claims its variables there, in
// established order, whether or not its Secret exists yet.
func Collisions(bindings []polykubev1alpha1.DatastoreBinding, containers []corev1.Container) []Collision {
	ordered := make([]*polykubev1alpha1.DatastoreBinding, 0, len(bindings))
	for i := range bindings {
		ordered = append(ordered, &bindings[i])
	}
	sort.SliceStable(ordered, func(i, j int) bool { return establishedBefore(ordered[i], ordered[j]) })
	var out []Collision
	for _, c := range containers {
		owner := map[string]string{}
		for _, b := range ordered {
			if !AppliesTo(b, c.Name) {
				continue
			}
			for _, name := range EnvNames(b) {
				switch w, taken := owner[name]; {
				case !taken:
					owner[name] = b.Name
				case w != b.Name:
					out = append(out, Collision{Container: c.Name, Var: name, Winner: w, Loser: b.Name})
				}
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		x, y := out[i], out[j]
		if x.Loser != y.Loser {
			return x.Loser < y.Loser
		}
		if x.Var != y.Var {
			return x.Var < y.Var
		}
		return x.Container < y.Container
	})
	return out
}

// LostBy returns the collisions binding loses.
func LostBy(collisions []Collision, binding string) []Collision {
	var out []Collision
	for _, c := range collisions {
		if c.Loser == binding {
			out = append(out, c)
		}
	}
	return out
}

// DescribeCollisions says, one clause per collision, which binding keeps which variable.
func DescribeCollisions(collisions []Collision) string {
	parts := make([]string, 0, len(collisions))
	for _, c := range collisions {
		parts = append(parts, fmt.Sprintf("%s in container %s is mapped by DatastoreBindings %s and %s; %s, established first, keeps it",
			c.Var, c.Container, c.Winner, c.Loser, c.Winner))
	}
	return strings.Join(parts, "; ")
}
