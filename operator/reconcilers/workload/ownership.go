package workload

import (
	"context"
	"errors"
	"fmt"
	"strings"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// ownership is what an object named after the Workload is to this Workload in this cluster.
type ownership int

const (
	// ownedHere: Polykube made it for this Workload, in this cluster.
	ownedHere ownership = iota
	// takeOver: Polykube made it in this cluster for an earlier Workload of the same name that
	// is gone (deleted with --cascade=orphan, or deleted and applied again before the garbage
	// collector got to it: Flux prune and re-add, a rename back, a backup restore). Names are
	// unique in a namespace, so a controller reference to a Workload of this name with another
	// UID can only point at one that no longer exists.
	takeOver
	// otherCluster: Polykube made it for another cluster's operator name. This operator leaves
	// it alone whatever it is told: its --cluster-name may be the wrong one.
	otherCluster
	// foreign: Polykube did not make it for a Workload of this name. Never adopted.
	foreign
)

// classify says what obj is to wl in the cluster this reconciler runs as.
func (r *Reconciler) classify(obj client.Object, wl *polykubev1alpha1.Workload) ownership {
	labels := obj.GetLabels()
	if labels[polykubev1alpha1.ManagedByLabel] != polykubev1alpha1.ManagedByValue {
		return foreign
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	isWorkloadRef := ref != nil && ref.Kind == "Workload" && strings.HasPrefix(ref.APIVersion, polykubev1alpha1.GroupVersion.Group+"/")
	madeForThisName := (isWorkloadRef && ref.Name == wl.Name) || (ref == nil && labels[polykubev1alpha1.WorkloadNameLabel] == wl.Name)
	if !madeForThisName {
		return foreign
	}
	if c := labels[polykubev1alpha1.ClusterLabel]; c != "" && c != r.ClusterName {
		return otherCluster
	}
	if isWorkloadRef && ref.UID == wl.UID {
		return ownedHere
	}
	if labels[polykubev1alpha1.WorkloadNameLabel] != wl.Name {
		return foreign
	}
	return takeOver
}

// ownershipOf reads the object of obj's kind named after the Workload into obj and says what it
// is to this Workload: ours (Polykube made it for this Workload in this cluster, or for an
// earlier Workload of this name, which it takes over), a conflict (an object Polykube did not
// make, or the foreign cache's probe finds one the manager's cache does not hold; reported only
// when the Workload wants one of this kind here) or another cluster's (never touched). One check
// for the Deployment, the Service and the HPA.
func (r *Reconciler) ownershipOf(ctx context.Context, wl *polykubev1alpha1.Workload, obj, probe client.Object, wanted bool) (
	ours bool, conflict, other string, err error) {
	key := client.ObjectKeyFromObject(wl)
	kind := kindOf(obj)
	if err := r.Get(ctx, key, obj); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, "", "", fmt.Errorf("get %s %s: %w", kind, key, err)
		}
		if !wanted {
			return false, "", "", nil
		}
		if held, err := r.foreignHolds(ctx, probe, key); err != nil || !held {
			return false, "", "", err
		}
		return false, fmt.Sprintf("%s %s", kind, key), "", nil
	}
	switch r.classify(obj, wl) {
	case takeOver:
		if err := r.takeOverObject(ctx, wl, obj); err != nil {
			return false, "", "", err
		}
	case otherCluster:
		return false, "", fmt.Sprintf("%s %s (cluster %q)", kind, key, obj.GetLabels()[polykubev1alpha1.ClusterLabel]), nil
	case foreign:
		if wanted {
			conflict = fmt.Sprintf("%s %s", kind, key)
		}
		return false, conflict, "", nil
	}
	return true, "", "", nil
}

// takeOverObject makes wl the controller of obj, replacing the reference to the Workload of
// the same name that is gone, and touches nothing else: the pod template stays as it is, so no
// pod restarts (applyDeployment changes it afterwards only if the new Workload's template
// differs). The patch carries obj's resourceVersion, so an object the garbage collector or
// anyone else changed meanwhile is not taken over from a stale copy.
func (r *Reconciler) takeOverObject(ctx context.Context, wl *polykubev1alpha1.Workload, obj client.Object) error {
	kind := kindOf(obj)
	before := obj.DeepCopyObject().(client.Object)
	var refs []metav1.OwnerReference
	for _, ref := range obj.GetOwnerReferences() {
		if ref.Kind == "Workload" && ref.Name == wl.Name && strings.HasPrefix(ref.APIVersion, polykubev1alpha1.GroupVersion.Group+"/") {
			continue
		}
		refs = append(refs, ref)
	}
	refs = append(refs, metav1.OwnerReference{
		APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload", Name: wl.Name, UID: wl.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
	})
	obj.SetOwnerReferences(refs)
	ctrl.LoggerFrom(ctx).Info("Taking over the object an earlier Workload of this name created in this cluster",
		"kind", kind, "object", client.ObjectKeyFromObject(obj))
	if err := r.Patch(ctx, obj, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("take over %s %s/%s from the earlier Workload of this name: %w", kind, obj.GetNamespace(), obj.GetName(), err)
	}
	if r.Recorder != nil {
		r.Recorder.Eventf(wl, obj, corev1.EventTypeNormal, polykubev1alpha1.ReasonTakenOver, "TakeOver",
			"took over %s %s, which Polykube created in cluster %q for an earlier Workload of this name; its pods keep running", kind, obj.GetName(), r.ClusterName)
	}
	return nil
}

// kindOf names the kind of an object the Workload reconciler creates, for logs and messages.
func kindOf(obj client.Object) string {
	switch obj.(type) {
	case *corev1.Service:
		return "Service"
	case *autoscalingv2.HorizontalPodAutoscaler:
		return "HorizontalPodAutoscaler"
	default:
		return "Deployment"
	}
}

// errCacheBehind is returned when a create finds the object already there although the cache
// did not show it: the cache is behind, and the next reconcile sees it. Not a failure.
var errCacheBehind = errors.New("the informer cache is behind the API server")

// otherClusterMessage explains why objects labelled for another cluster are left alone.
func otherClusterMessage(others []string, cluster string) string {
	return fmt.Sprintf("%s %s labelled by Polykube for another cluster, but this operator runs as %q: it leaves them untouched (no delete, scale or relabel). If --cluster-name is wrong, fix CLUSTER_NAME in this cluster's Flux entry point; if they are left over from a renamed cluster, delete them by hand",
		strings.Join(others, " and "), pluralIs(len(others)), cluster)
}
