// Package identity pins the operator to the cluster it runs in. Every cluster holds the whole
// roster, so a --cluster-name copied from another cluster's Flux entry point names a valid
// ClusterMember, and an operator believing it is another member would delete that cluster's
// Deployments as "no longer targeted here". The pin prevents it: on its first start in a
// cluster the operator records, in a ConfigMap of its namespace, the ClusterMember it runs as
// and the UID of this cluster's kube-system Namespace (the cluster ID of the Multi-Cluster
// Services API, KEP-2149: it never changes for the life of a cluster and differs between
// clusters). Every later start compares: another name, or a ConfigMap that came from another
// cluster (a restored backup), and the operator refuses to start its controllers, saying so in
// the log, in an event and in a condition on the pinned ClusterMember.
package identity

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// +kubebuilder:rbac:groups="",resources=namespaces,resourceNames=kube-system,verbs=get
// +kubebuilder:rbac:groups="",namespace=polykube-system,resources=configmaps,verbs=get;create
// +kubebuilder:rbac:groups="",namespace=polykube-system,resources=configmaps,resourceNames=polykube-identity,verbs=patch
// +kubebuilder:rbac:groups=polykube.kismet.io,resources=clustermembers/status,verbs=patch

const (
	// ConfigMapName is the pin's ConfigMap, in the operator's namespace.
	ConfigMapName = "polykube-identity"
	// DefaultNamespace is the operator's namespace in gitops/operator.
	DefaultNamespace = "polykube-system"

	keyClusterName = "clusterName"
	keyClusterUID  = "kubeSystemUID"
	// KeyOperatorVersion holds the version of the operator that last started in this cluster:
	// during a fleet upgrade it tells, from the cluster alone, which release runs here.
	KeyOperatorVersion = "operatorVersion"
)

// ErrMismatch is wrapped by the error Pin returns when the operator must not run.
var ErrMismatch = errors.New("identity mismatch")

// Pin records this cluster's identity on the first start and checks it on every later one.
// It returns an error wrapping ErrMismatch, with what to do, when the operator was started as
// another member than the one this cluster is pinned to; the caller must then act on nothing.
// reporter names the event's reporting controller.
func Pin(ctx context.Context, c client.Client, reporter, namespace, clusterName string) error {
	ks := &corev1.Namespace{}
	if err := c.Get(ctx, client.ObjectKey{Name: "kube-system"}, ks); err != nil {
		return fmt.Errorf("read the kube-system Namespace, whose UID identifies this cluster: %w", err)
	}
	uid := string(ks.UID)

	cm := &corev1.ConfigMap{}
	err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ConfigMapName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		cm = &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: ConfigMapName, Labels: map[string]string{
				polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue,
			}},
			Data: map[string]string{keyClusterName: clusterName, keyClusterUID: uid},
		}
		if err := c.Create(ctx, cm); err != nil {
			if apierrors.IsAlreadyExists(err) { // another replica pinned it first: check against that
				return Pin(ctx, c, reporter, namespace, clusterName)
			}
			return fmt.Errorf("record this cluster's identity in ConfigMap %s/%s: %w", namespace, ConfigMapName, err)
		}
		return setCondition(ctx, c, clusterName, metav1.ConditionTrue, polykubev1alpha1.ReasonIdentityPinned,
			fmt.Sprintf("this cluster (kube-system UID %s) is pinned to ClusterMember %q in ConfigMap %s/%s", uid, clusterName, namespace, ConfigMapName))
	case err != nil:
		return fmt.Errorf("read this cluster's identity from ConfigMap %s/%s: %w", namespace, ConfigMapName, err)
	}

	pinnedName, pinnedUID := cm.Data[keyClusterName], cm.Data[keyClusterUID]
	var msg string
	switch {
	case pinnedUID != uid:
		msg = fmt.Sprintf("ConfigMap %s/%s pins ClusterMember %q for the cluster whose kube-system UID is %s, but this cluster's is %s: it was copied from another cluster (a restored backup?). Check that --cluster-name %q is this cluster, then delete the ConfigMap so that the operator pins this cluster anew",
			namespace, ConfigMapName, pinnedName, pinnedUID, uid, clusterName)
	case pinnedName != clusterName:
		msg = fmt.Sprintf("this cluster is pinned to ClusterMember %q (ConfigMap %s/%s), but the operator was started with --cluster-name %q: it refuses to act as another member, which would delete that member's view of every Workload here. Fix --cluster-name (CLUSTER_NAME in this cluster's Flux entry point); to rename this cluster on purpose, delete the ConfigMap and restart the operator",
			pinnedName, namespace, ConfigMapName, clusterName)
	default:
		return setCondition(ctx, c, clusterName, metav1.ConditionTrue, polykubev1alpha1.ReasonIdentityPinned,
			fmt.Sprintf("this cluster (kube-system UID %s) is pinned to ClusterMember %q in ConfigMap %s/%s", uid, clusterName, namespace, ConfigMapName))
	}
	// The event is created directly, not through a broadcaster: the operator exits right after,
	// and a broadcaster's asynchronous sink would lose it.
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Namespace: namespace, GenerateName: ConfigMapName + "-"},
		EventTime:           metav1.NowMicro(),
		ReportingController: reporter,
		ReportingInstance:   reporter + "-" + clusterName,
		Action:              "Start",
		Reason:              polykubev1alpha1.ReasonIdentityMismatch,
		Type:                corev1.EventTypeWarning,
		Note:                truncate(msg, 1024),
		Regarding:           corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: namespace, Name: ConfigMapName, UID: cm.UID},
	}
	evErr := c.Create(ctx, ev)
	if err := setCondition(ctx, c, pinnedName, metav1.ConditionFalse, polykubev1alpha1.ReasonIdentityMismatch, msg); err != nil {
		return fmt.Errorf("%w: %s (and the condition could not be written: %v)", ErrMismatch, msg, err)
	}
	if evErr != nil {
		return fmt.Errorf("%w: %s (and the event could not be recorded: %v)", ErrMismatch, msg, evErr)
	}
	return fmt.Errorf("%w: %s", ErrMismatch, msg)
}

// RecordVersion writes the running operator's version into the pin ConfigMap, which Pin must
// have created or checked first. It writes only when the version changed, so a restart of the
// same release does not touch the ConfigMap.
func RecordVersion(ctx context.Context, c client.Client, namespace, version string) error {
	cm := &corev1.ConfigMap{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: namespace, Name: ConfigMapName}, cm); err != nil {
		return fmt.Errorf("read ConfigMap %s/%s to record the operator version: %w", namespace, ConfigMapName, err)
	}
	if cm.Data[KeyOperatorVersion] == version {
		return nil
	}
	before := cm.DeepCopy()
	if cm.Data == nil {
		cm.Data = map[string]string{}
	}
	cm.Data[KeyOperatorVersion] = version
	if err := c.Patch(ctx, cm, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("record operator version %s in ConfigMap %s/%s: %w", version, namespace, ConfigMapName, err)
	}
	return nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-1] + "…"
}

// setCondition writes the OperatorIdentity condition on this cluster's copy of the named
// ClusterMember, if it exists (the roster may not have arrived yet).
func setCondition(ctx context.Context, c client.Client, member string, status metav1.ConditionStatus, reason, msg string) error {
	cm := &polykubev1alpha1.ClusterMember{}
	if err := c.Get(ctx, client.ObjectKey{Name: member}, cm); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("get ClusterMember %q: %w", member, err)
	}
	before := cm.DeepCopy()
	changed := meta.SetStatusCondition(&cm.Status.Conditions, metav1.Condition{Type: polykubev1alpha1.OperatorIdentityCondition,
		Status: status, Reason: reason, Message: msg, ObservedGeneration: cm.Generation})
	if !changed {
		return nil
	}
	if err := c.Status().Patch(ctx, cm, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("write the %s condition of ClusterMember %q: %w", polykubev1alpha1.OperatorIdentityCondition, member, err)
	}
	return nil
}
