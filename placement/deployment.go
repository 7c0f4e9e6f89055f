package placement

import (
	"maps"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// OwnedLabels are the labels of every object the operator of cluster creates for the Workload
// named name: managed by Polykube, for that Workload, in that cluster.
func OwnedLabels(name, cluster string) map[string]string {
	return map[string]string{
		polykubev1alpha1.ManagedByLabel:    polykubev1alpha1.ManagedByValue,
		polykubev1alpha1.WorkloadNameLabel: name,
		polykubev1alpha1.ClusterLabel:      cluster,
	}
}

// PodSelector selects the pods of the Workload named name: the Deployment's selector and the
// Service's.
func PodSelector(name string) map[string]string {
	return map[string]string{polykubev1alpha1.WorkloadNameLabel: name}
}

// Deployment is the Deployment the operator of cluster runs for the Workload, as far as the
// Workload, the cluster's name and its replicas determine it: name, namespace, the owned labels,
// the pod selector, and the effective template (EffectiveTemplate) with the selector's label and
// the cluster's name on the pods. The operator adds what only its cluster knows (the owner
// reference to the Workload's UID, the env vars DatastoreBindings inject from local Secrets, the
// hash of what it wrote); polykube-status plan renders this as it is. Both build it here so that
// they cannot drift: a field added to the Deployment is added once, for both.
//
// It is part of the upgrade contract: what it returns for a Workload must not change between
// two operator versions that may run side by side, or the second would roll the pods.
func Deployment(wl *polykubev1alpha1.Workload, effective corev1.PodTemplateSpec, cluster string, replicas int32) *appsv1.Deployment {
	tmpl := *effective.DeepCopy()
	tmpl.Labels = maps.Clone(tmpl.Labels)
	if tmpl.Labels == nil {
		tmpl.Labels = map[string]string{}
	}
	maps.Copy(tmpl.Labels, PodSelector(wl.Name))
	// The pods carry their cluster's name, so that a container can read it through the
	// downward API (metadata.labels['polykube.kismet.io/cluster']) while the Workload's spec
	// stays the same in every cluster (a per-cluster substitution would make the clusters'
	// specs, and so their specHash, disagree).
	tmpl.Labels[polykubev1alpha1.ClusterLabel] = cluster
	return &appsv1.Deployment{
		TypeMeta: metav1.TypeMeta{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      wl.Name,
			Namespace: wl.Namespace,
			Labels:    OwnedLabels(wl.Name, cluster),
		},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: PodSelector(wl.Name)},
			Template: tmpl,
		},
	}
}
