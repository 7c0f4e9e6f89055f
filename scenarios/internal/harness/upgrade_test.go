package harness

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestFleetAtRest(t *testing.T) {
	deploy := func(name string, generation int64, st appsv1.DeploymentStatus) appsv1.Deployment {
		d := appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: generation}, Status: st}
		d.Spec.Replicas = ptr.To[int32](2)
		return d
	}
	done := appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2}
	pod := func(name string, terminating bool) corev1.Pod {
		p := corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if terminating {
			p.DeletionTimestamp = &metav1.Time{}
		}
		return p
	}
	for _, tc := range []struct {
		name    string
		deploys []appsv1.Deployment
		pods    []corev1.Pod
		want    string // "" when at rest, else a part of the error
	}{
		{"rolled out", []appsv1.Deployment{deploy("web", 2, done)}, []corev1.Pod{pod("web-a", false), pod("web-b", false)}, ""},
		{"nothing in the namespace", nil, nil, ""},
		// What failed the upgrade scenario on kind: a DatastoreBinding changed checkout's
		// template, and the old pod was still there (and went after the record).
		{"an old replica left", []appsv1.Deployment{deploy("checkout", 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 3, UpdatedReplicas: 2, AvailableReplicas: 2})}, nil, "Deployment checkout rolling out"},
		{"the new template not observed yet", []appsv1.Deployment{deploy("checkout", 3, done)}, nil, "generation 3 observed 2"},
		{"not every replica available", []appsv1.Deployment{deploy("web", 2, appsv1.DeploymentStatus{ObservedGeneration: 2, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 1})}, nil, "1 available"},
		{"a pod terminating", []appsv1.Deployment{deploy("web", 2, done)}, []corev1.Pod{pod("web-a", false), pod("web-old", true)}, "pod web-old is terminating"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := fleetAtRest(tc.deploys, tc.pods)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("want at rest, got %v", err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Fatalf("want an error naming %q, got %v", tc.want, err)
			}
		})
	}
}
