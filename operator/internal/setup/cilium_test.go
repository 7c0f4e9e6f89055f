package setup_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/polykube/polykube/operator/internal/setup"
)

func ciliumConfig(data map[string]string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cilium-config"}, Data: data}
}

// Cilium's cluster-name must be the ClusterMember name: the peers find this cluster's mirrored
// slices by it. Only a ConfigMap that names another cluster is an error.
func TestCheckCiliumClusterName(t *testing.T) {
	tests := []struct {
		name     string
		objects  []client.Object
		mismatch bool
	}{
		{"no Cilium", nil, false},
		{"no cluster-name", []client.Object{ciliumConfig(map[string]string{"cluster-id": "1"})}, false},
		{"the same name", []client.Object{ciliumConfig(map[string]string{"cluster-name": "alpha"})}, false},
		{"another name", []client.Object{ciliumConfig(map[string]string{"cluster-name": "kind-alpha"})}, true},
		{"Cilium's default name", []client.Object{ciliumConfig(map[string]string{"cluster-name": "default"})}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithObjects(tt.objects...).Build()
			err := setup.CheckCiliumClusterName(context.Background(), c, "alpha")
			if got := errors.Is(err, setup.ErrCiliumClusterName); got != tt.mismatch {
				t.Fatalf("mismatch = %v (%v), want %v", got, err, tt.mismatch)
			}
			if !tt.mismatch && err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if tt.mismatch {
				for _, want := range []string{`--cluster-name "alpha"`, "set Cilium's cluster.name to the ClusterMember name"} {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("the error does not say %s: %v", want, err)
					}
				}
			}
		})
	}
}
