package datapath

import (
	"context"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/wait"
)

// ClusterMeshNodePortBase is the clustermesh-apiserver NodePort of the first cluster; the
// i-th cluster uses base+i. Distinct ports are needed because with kube-proxy replacement a
// NodePort that is the same in two clusters is always answered by the local cluster
// (cilium/cilium#24692), so the remote clustermesh-apiserver would never be reached.
const ClusterMeshNodePortBase = 32379

// CiliumCASecret is the Secret in kube-system holding the CA that signs Cilium's ClusterMesh
// certificates. Every cluster of a mesh must share it: the first cluster's install creates
// it, and it is copied to the others before their install.
const CiliumCASecret = "cilium-ca"

// CiliumNamespace is where Cilium runs.
const CiliumNamespace = "kube-system"

// ClusterMeshNodePort is the clustermesh-apiserver NodePort of a member.
func ClusterMeshNodePort(m Member) int { return ClusterMeshNodePortBase + m.Index }

// CiliumInstallArgs are the arguments of `cilium install` for a member: its mesh identity
// (cluster.name, the unique cluster.id), its pod CIDR as Cilium's IPAM pool, kube-proxy
// replacement talking to the API server directly, and its own clustermesh-apiserver NodePort
// (set at install so that `clustermesh enable`, which reuses the release's values, keeps it).
func CiliumInstallArgs(m Member) []string {
	set := func(kv string) []string { return []string{"--set", kv} }
	args := []string{"install", "--context", m.Context, "--version", CiliumVersion}
	for _, kv := range []string{
		"cluster.name=" + m.Name,
		"cluster.id=" + strconv.Itoa(int(m.ClusterID)),
		"ipam.mode=cluster-pool",
		"ipam.operator.clusterPoolIPv4PodCIDRList={" + m.PodCIDRs[0] + "}",
		"kubeProxyReplacement=true",
		"k8sServiceHost=" + m.APIHost,
		"k8sServicePort=" + strconv.Itoa(m.APIPort),
		"operator.replicas=1",
		"clustermesh.apiserver.service.type=NodePort",
		"clustermesh.apiserver.service.nodePort=" + strconv.Itoa(ClusterMeshNodePort(m)),
	} {
		args = append(args, set(kv)...)
	}
	return args
}

// InstallCilium installs Cilium in every member, the first one first so that its CA can be
// copied to the others before their install, and waits until every agent is ready.
func InstallCilium(ctx context.Context, e *Env) error {
	for _, m := range e.Members {
		if m.Index > 0 {
			if err := CopyCA(ctx, e, e.Members[0], m); err != nil {
				return err
			}
		}
		if _, err := e.Runner.Run(ctx, e.cli("cilium", CiliumInstallArgs(m)...)); err != nil {
			return fmt.Errorf("install Cilium in %s: %w", m.Name, err)
		}
	}
	return e.each(func(m Member) error {
		_, err := e.Runner.Run(ctx, e.cli("cilium", "status", "--context", m.Context, "--wait"))
		return err
	})
}

// CopyCA copies the cilium-ca Secret of one member to another (unless it is there already),
// so that both sign ClusterMesh certificates with the same CA.
func CopyCA(ctx context.Context, e *Env, from, to Member) error {
	if !e.Runner.Note("copy Secret %s/%s from %s to %s", CiliumNamespace, CiliumCASecret, from.Context, to.Context) {
		return nil
	}
	src, err := e.Client(from)
	if err != nil {
		return err
	}
	dst, err := e.Client(to)
	if err != nil {
		return err
	}
	var ca corev1.Secret
	key := client.ObjectKey{Namespace: CiliumNamespace, Name: CiliumCASecret}
	err = wait.For(ctx, e.wait(WaitCiliumCA), fmt.Sprintf("Secret %s in %s", key, from.Name), func(ctx context.Context) error {
		return src.Get(ctx, key, &ca)
	})
	if err != nil {
		return err
	}
	cp := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: ca.Name, Namespace: ca.Namespace, Labels: ca.Labels, Annotations: ca.Annotations},
		Type:       ca.Type,
		Data:       ca.Data,
	}
	if err := dst.Create(ctx, cp); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("create Secret %s in %s: %w", key, to.Name, err)
	}
	return nil
}

// ConnectClusterMesh enables the clustermesh-apiserver of every member on its NodePort,
// connects every pair of members (each connection is bidirectional) and waits until every
// member reports the mesh ready.
func ConnectClusterMesh(ctx context.Context, e *Env) error {
	if err := e.each(func(m Member) error {
		_, err := e.Runner.Run(ctx, e.cli("cilium", "clustermesh", "enable", "--context", m.Context, "--service-type", "NodePort"))
		return err
	}); err != nil {
		return err
	}
	if err := MeshStatus(ctx, e); err != nil {
		return err
	}
	for i, a := range e.Members {
		for _, b := range e.Members[i+1:] {
			if _, err := e.Runner.Run(ctx, e.cli("cilium", "clustermesh", "connect", "--context", a.Context, "--destination-context", b.Context)); err != nil {
				return fmt.Errorf("connect %s and %s: %w", a.Name, b.Name, err)
			}
		}
	}
	return MeshStatus(ctx, e)
}

// MeshStatus waits until every member's ClusterMesh reports ready (cilium clustermesh status
// --wait); it is also the harness's MeshReady.
func MeshStatus(ctx context.Context, e *Env) error {
	w := e.wait(WaitMeshReady)
	return e.each(func(m Member) error {
		_, err := e.Runner.Run(ctx, e.cli("cilium", "clustermesh", "status", "--context", m.Context, "--wait", "--wait-duration", w.Timeout.Duration.String()))
		return err
	})
}
