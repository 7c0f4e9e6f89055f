package datastorebinding

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func TestCollisions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Second))
	mk := func(name string, created metav1.Time, uid, prefix string, containers ...string) polykubev1alpha1.DatastoreBinding {
		b := *binding(prefix, containers...)
		b.Name, b.CreationTimestamp, b.UID = name, created, types.UID(uid)
		return b
	}
	app, side := corev1.Container{Name: "app"}, corev1.Container{Name: "sidecar"}
	tests := []struct {
		name       string
		bindings   []polykubev1alpha1.DatastoreBinding
		containers []corev1.Container
		want       []Collision
	}{
		{
			name:       "different prefixes: no collision",
			bindings:   []polykubev1alpha1.DatastoreBinding{mk("a", t0, "1", "A_"), mk("b", t0, "2", "B_")},
			containers: []corev1.Container{app},
		},
		{
			name:       "older binding keeps the variables, although its name sorts last",
			bindings:   []polykubev1alpha1.DatastoreBinding{mk("a-new", t1, "1", "DB_"), mk("z-old", t0, "2", "DB_")},
			containers: []corev1.Container{app},
			want: []Collision{
				{Container: "app", Var: "DB_HOST", Winner: "z-old", Loser: "a-new"},
				{Container: "app", Var: "DB_PASS", Winner: "z-old", Loser: "a-new"},
				{Container: "app", Var: "DB_PASSWORD", Winner: "z-old", Loser: "a-new"},
			},
		},
		{
			name:       "same second: the UID decides",
			bindings:   []polykubev1alpha1.DatastoreBinding{mk("a", t0, "9", "DB_"), mk("b", t0, "1", "DB_")},
			containers: []corev1.Container{app},
			want: []Collision{
				{Container: "app", Var: "DB_HOST", Winner: "b", Loser: "a"},
				{Container: "app", Var: "DB_PASS", Winner: "b", Loser: "a"},
				{Container: "app", Var: "DB_PASSWORD", Winner: "b", Loser: "a"},
			},
		},
		{
			name:       "different containers: no collision",
			bindings:   []polykubev1alpha1.DatastoreBinding{mk("a", t0, "1", "DB_", "app"), mk("b", t1, "2", "DB_", "sidecar")},
			containers: []corev1.Container{app, side},
		},
		{
			name:       "one shared container collides, the other does not",
			bindings:   []polykubev1alpha1.DatastoreBinding{mk("a", t0, "1", "DB_", "app"), mk("b", t1, "2", "DB_")},
			containers: []corev1.Container{app, side},
			want: []Collision{
				{Container: "app", Var: "DB_HOST", Winner: "a", Loser: "b"},
				{Container: "app", Var: "DB_PASS", Winner: "a", Loser: "b"},
				{Container: "app", Var: "DB_PASSWORD", Winner: "a", Loser: "b"},
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			g.Expect(Collisions(tc.bindings, tc.containers)).To(Equal(tc.want))
			// The list order decides nothing.
			reversed := []polykubev1alpha1.DatastoreBinding{tc.bindings[1], tc.bindings[0]}
			g.Expect(Collisions(reversed, tc.containers)).To(Equal(tc.want))
		})
	}
}
