package setup

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Cilium labels every EndpointSlice it mirrors with the source cluster's cluster.name (Helm
// cluster.name, the cluster-name key of the cilium-config ConfigMap in kube-system). Capacity
// failover finds a peer's slices by its ClusterMember name, so the two must be equal: with
// another cluster.name the peers' slices name no target, and failover sees no peer at all
// (FailoverReady=False/NoMeshView, naming the sources). The check reads only that one
// ConfigMap: a get on it, by name.
//
// +kubebuilder:rbac:groups="",resources=configmaps,resourceNames=cilium-config,verbs=get

const (
	// CiliumConfigNamespace and CiliumConfigName locate Cilium's agent configuration.
	CiliumConfigNamespace = "kube-system"
	CiliumConfigName      = "cilium-config"
	// CiliumClusterNameKey is the key of cluster.name in it.
	CiliumClusterNameKey = "cluster-name"
)

// ErrCiliumClusterName is wrapped by the error CheckCiliumClusterName returns when Cilium's
// cluster-name is not this operator's --cluster-name.
var ErrCiliumClusterName = errors.New("cilium cluster-name differs from --cluster-name")

// CiliumClusterNameMismatch compares Cilium's configuration with the operator's cluster name:
// nil when cm is nil (no Cilium, or another install layout), has no cluster-name, or names the
// same cluster; else an error wrapping ErrCiliumClusterName that says what to fix.
func CiliumClusterNameMismatch(cm *corev1.ConfigMap, clusterName string) error {
	if cm == nil {
		return nil
	}
	name, ok := cm.Data[CiliumClusterNameKey]
	if !ok || name == clusterName {
		return nil
	}
	return fmt.Errorf("%w: Cilium in this cluster is named %q (cluster-name in ConfigMap %s/%s) but the operator runs as --cluster-name %q; "+
		"Cilium labels the EndpointSlices it mirrors to the peers with its own name, so the other clusters' capacity failover cannot see this one "+
		"(FailoverReady=False/NoMeshView there, naming %q): set Cilium's cluster.name to the ClusterMember name %q, or rename the ClusterMember "+
		"and CLUSTER_NAME in this cluster's Flux entry point to %q",
		ErrCiliumClusterName, name, CiliumConfigNamespace, CiliumConfigName, clusterName, name, clusterName, name)
}

// CheckCiliumClusterName reads Cilium's configuration and compares it (CiliumClusterNameMismatch).
// A missing ConfigMap is no error. Another read error (a Forbidden from an older RBAC) is
// returned as is: the caller cannot tell, and says so.
func CheckCiliumClusterName(ctx context.Context, c client.Reader, clusterName string) error {
	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: CiliumConfigNamespace, Name: CiliumConfigName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("read ConfigMap %s/%s to compare Cilium's cluster-name with --cluster-name: %w", CiliumConfigNamespace, CiliumConfigName, err)
	}
	return CiliumClusterNameMismatch(cm, clusterName)
}

// CheckMeshName runs CheckCiliumClusterName with a client of its own, before the manager
// starts. The operator runs either way: a mismatch breaks only capacity failover, which
// reports it on each Workload too.
func CheckMeshName(ctx context.Context, cfg *rest.Config, o Options) error {
	s, err := Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("create a client to read Cilium's configuration: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	return CheckCiliumClusterName(ctx, c, o.ClusterName)
}
