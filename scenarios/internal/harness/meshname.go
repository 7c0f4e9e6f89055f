package harness

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SetCiliumClusterName gives cluster a Cilium cluster name (cilium-config's cluster-name, Helm
// cluster.name) other than its ClusterMember name. With the test bed's mesh mirror (kwok) it
// writes that ConfigMap: the mirror then labels the cluster's mirrored slices with that name,
// as Cilium does with a misconfigured cluster.name, and the teardown removes it. With real
// Cilium the name is part of its install, which a scenario does not redo: the topology gives it
// (meshName, as topology-kind-misnamed.yaml does), and the step checks that Cilium in the
// cluster goes by that name.
func (sc *Scenario) SetCiliumClusterName(ctx context.Context, cluster, name string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	if sc.mirror == nil {
		cm := &corev1.ConfigMap{}
		err := c.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: "cilium-config"}, cm)
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("giving cluster %q the Cilium cluster name %q: the cluster runs no Cilium (no kube-system/cilium-config) and the run has no mesh mirror; "+
				"on kwok tag the scenario @mesh-mirror and @misnamed-mesh", cluster, name)
		}
		if err != nil {
			return fmt.Errorf("read Cilium's cluster name in cluster %q (kube-system/cilium-config): %w", cluster, err)
		}
		if got := cm.Data["cluster-name"]; got != name {
			return fmt.Errorf("Cilium in cluster %q goes by %q, not %q: with real Cilium the name is cluster.name of its install, which a scenario does not redo; "+
				"run on a topology that gives cluster %q meshName %q (POLYKUBE_SCENARIO_TOPOLOGY=topology-kind-misnamed.yaml)", cluster, got, name, cluster, name)
		}
		return nil
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
