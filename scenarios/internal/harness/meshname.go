package harness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// SetCiliumClusterName gives cluster a Cilium cluster name (cilium-config's cluster-name, Helm
// cluster.name) other than its ClusterMember name: the test bed's mesh mirror then labels its
// mirrored slices with that name, as Cilium does with a misconfigured cluster.name. Only the
// mesh mirror reads it: on a datapath provider the ConfigMap is Cilium's own, and renaming a
// running ClusterMesh member is not a step a scenario takes. The teardown removes the name.
func (sc *Scenario) SetCiliumClusterName(ctx context.Context, cluster, name string) error {
	if sc.mirror == nil {
		return fmt.Errorf("giving cluster %q the Cilium cluster name %q needs the test bed's mesh mirror (tag the scenario @mirror-only and @mesh-mirror); with real Cilium the name is cluster.name of its Helm values", cluster, name)
	}
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cilium-config"},
		Data: map[string]string{"cluster-name": name}}
	sc.OnTeardown(fmt.Sprintf("the Cilium cluster name of %q", cluster), func(ctx context.Context) error {
		if err := c.Delete(ctx, cm); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete kube-system/cilium-config in cluster %q: %w", cluster, err)
		}
		return nil
	})
	if err := c.Create(ctx, cm); err != nil {
		return fmt.Errorf("create kube-system/cilium-config with cluster-name %q in cluster %q: %w", name, cluster, err)
	}
	return nil
}
