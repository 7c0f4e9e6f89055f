package workload

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/reconcilers/datastorebinding"
	"github.com/polykube/polykube/placement"
)

// TemplateHashAnnotation records the hash of what the operator last wrote into a Deployment's
// or Service's spec. Comparing it with the hash of the desired spec tells the operator whether
// to write, without being confused by the fields the API server defaults.
const TemplateHashAnnotation = "polykube.kismet.io/template-hash"

// binding is a DatastoreBinding with the outcome of checking its Secret.
type binding struct {
	*polykubev1alpha1.DatastoreBinding
	// resolved is true when the Secret and every key exist.
	resolved bool
}

// ownedLabels are the labels of every object the Workload reconciler creates.
func ownedLabels(wl *polykubev1alpha1.Workload, cluster string) map[string]string {
	return placement.OwnedLabels(wl.Name, cluster)
}

// selector is the pod selector of the Deployment and the Service.
func selector(wl *polykubev1alpha1.Workload) map[string]string { return placement.PodSelector(wl.Name) }

// ownerRef makes the Workload the controller of an object, so that deleting the Workload
// garbage-collects it and so that the operator recognises it as its own.
func ownerRef(wl *polykubev1alpha1.Workload) metav1.OwnerReference {
	return metav1.OwnerReference{
		APIVersion:         polykubev1alpha1.GroupVersion.String(),
		Kind:               "Workload",
		Name:               wl.Name,
		UID:                wl.UID,
		Controller:         ptr.To(true),
		BlockOwnerDeletion: ptr.To(true),
	}
}

// desiredDeployment is the Deployment this cluster runs for the Workload, from its effective
// template (spec.template with the overrides that select this cluster, placement.EffectiveTemplate).
// existing (may be nil) is the current Deployment: env vars of bindings whose Secret is missing
// are carried over from it unchanged, so a Secret that disappears never changes a running
// Deployment.
func desiredDeployment(wl *polykubev1alpha1.Workload, effective corev1.PodTemplateSpec, cluster string, replicas int32,
	bindings []binding, existing *appsv1.Deployment) *appsv1.Deployment {
	// The shape is the one polykube-status plan shows (placement.Deployment); this adds what
	// only this cluster knows.
	d := placement.Deployment(wl, effective, cluster, replicas)
	d.TypeMeta = metav1.TypeMeta{}
	d.OwnerReferences = []metav1.OwnerReference{ownerRef(wl)}
	injectEnv(&d.Spec.Template, bindings, existing)
	d.Annotations = map[string]string{TemplateHashAnnotation: deploymentHash(d.Spec)}
	return d
}

// deploymentHash is what the template-hash annotation of a Deployment records: its whole spec
// but the replicas (compared on their own, and an HPA may own them). The selector and the
// template are encoded first, as operators up to v0.1.0 hashed them, and the spec's other fields
// follow only when one is set: a spec that sets nothing else (every one placement.Deployment
// renders today) keeps the hash it had, so an upgrade rewrites no Deployment (decision 0012).
func deploymentHash(spec appsv1.DeploymentSpec) string {
	rest := spec.DeepCopy()
	rest.Replicas, rest.Selector, rest.Template = nil, nil, corev1.PodTemplateSpec{}
	v := struct {
		Selector *metav1.LabelSelector
		Template corev1.PodTemplateSpec
		// Rest is the spec's other fields; left out (nil) while none is set.
		Rest *appsv1.DeploymentSpec `json:",omitempty"`
	}{Selector: spec.Selector, Template: spec.Template}
	if !apiequality.Semantic.DeepEqual(*rest, appsv1.DeploymentSpec{}) {
		v.Rest = rest
	}
	return hashOf(v)
}

// updatedDeployment is existing with what the operator writes taken from want: its labels and
// annotations (others' are kept) and its whole spec, but for the replicas without
// manageReplicas (an HPA owns them then). Fields the API server defaults and want leaves unset
// are written unset and defaulted again to the same values.
func updatedDeployment(existing, want *appsv1.Deployment, manageReplicas bool) *appsv1.Deployment {
	updated := existing.DeepCopy()
	updated.Labels = mergeMaps(updated.Labels, want.Labels)
	updated.Annotations = mergeMaps(updated.Annotations, want.Annotations)
	replicas := updated.Spec.Replicas
	updated.Spec = *want.Spec.DeepCopy()
	if !manageReplicas {
		updated.Spec.Replicas = replicas
	}
	return updated
}

// desiredHPA is the HorizontalPodAutoscaler of an autoscaled Workload in a cluster whose
// bounds b let it run one (b.Autoscaled()): it scales the Workload's Deployment between this
// cluster's minimum and maximum, with the spec's metrics and behavior.
func desiredHPA(wl *polykubev1alpha1.Workload, cluster string, b placement.Bounds) *autoscalingv2.HorizontalPodAutoscaler {
	a := wl.Spec.Autoscaling
	h := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{
			Name:            wl.Name,
			Namespace:       wl.Namespace,
			Labels:          ownedLabels(wl, cluster),
			OwnerReferences: []metav1.OwnerReference{ownerRef(wl)},
		},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment", Name: wl.Name},
			MinReplicas:    ptr.To(b.Min),
			MaxReplicas:    b.Max,
		},
	}
	for _, m := range a.Metrics {
		h.Spec.Metrics = append(h.Spec.Metrics, *m.DeepCopy())
	}
	if a.Behavior != nil {
		h.Spec.Behavior = a.Behavior.DeepCopy()
	}
	h.Annotations = map[string]string{TemplateHashAnnotation: hashOf(h.Spec)}
	return h
}

// hpaUpToDate is true when the HPA has what the operator wrote last (the template hash) and the
// bounds and target it wants: a hand edit of the bounds or the target is undone, while fields
// the API server defaults (the metrics, the behavior's policies) are not compared.
func hpaUpToDate(have, want *autoscalingv2.HorizontalPodAutoscaler) bool {
	return have.Annotations[TemplateHashAnnotation] == want.Annotations[TemplateHashAnnotation] &&
		ptr.Deref(have.Spec.MinReplicas, 1) == *want.Spec.MinReplicas && have.Spec.MaxReplicas == want.Spec.MaxReplicas &&
		have.Spec.ScaleTargetRef == want.Spec.ScaleTargetRef && hasLabels(have.Labels, want.Labels)
}

// desiredService is the ClusterIP Service selecting the Workload's pods, or nil when the
// Workload declares no ports: placement.Service, with the owner reference and the hash of its
// spec.
func desiredService(wl *polykubev1alpha1.Workload, cluster string) *corev1.Service {
	s := placement.Service(wl, cluster)
	if s == nil {
		return nil
	}
	s.TypeMeta = metav1.TypeMeta{}
	s.OwnerReferences = []metav1.OwnerReference{ownerRef(wl)}
	s.Annotations = map[string]string{TemplateHashAnnotation: hashOf(s.Spec)}
	return s
}

// injectEnv adds every binding's env vars to the containers it applies to, replacing a
// template env var of the same name (reported by envCondition). Bindings are applied in the
// order they were established (datastorebinding.ForWorkload); a variable another binding
// claimed first in the container is left to that binding (datastorebinding.Collisions). A
// binding whose Secret or keys are missing adds nothing new, but still claims its variables;
// the env vars it injected before are carried over from the existing Deployment as they are.
func injectEnv(tmpl *corev1.PodTemplateSpec, bindings []binding, existing *appsv1.Deployment) {
	for i := range tmpl.Spec.Containers {
		c := &tmpl.Spec.Containers[i]
		claimed := map[string]string{}
		for _, b := range bindings {
			if !datastorebinding.AppliesTo(b.DatastoreBinding, c.Name) {
				continue
			}
			vars := datastorebinding.EnvVars(b.DatastoreBinding)
			if !b.resolved {
				vars = injectedBefore(existing, c.Name, b.DatastoreBinding)
			}
			for _, v := range vars {
				if owner, ok := claimed[v.Name]; ok && owner != b.Name {
					continue
				}
				c.Env = setEnv(c.Env, v)
			}
			for _, name := range datastorebinding.EnvNames(b.DatastoreBinding) {
				if _, ok := claimed[name]; !ok {
					claimed[name] = b.Name
				}
			}
		}
	}
}

// injectedBefore returns the env vars of container in the existing Deployment that the binding
// injected: named like one of its env vars and referencing its Secret.
func injectedBefore(existing *appsv1.Deployment, container string, b *polykubev1alpha1.DatastoreBinding) []corev1.EnvVar {
	if existing == nil {
		return nil
	}
	var env []corev1.EnvVar
	for _, c := range existing.Spec.Template.Spec.Containers {
		if c.Name == container {
			env = c.Env
			break
		}
	}
	var out []corev1.EnvVar
	for _, name := range datastorebinding.EnvNames(b) {
		for _, v := range env {
			if v.Name == name && v.ValueFrom != nil && v.ValueFrom.SecretKeyRef != nil &&
				v.ValueFrom.SecretKeyRef.Name == b.Spec.SecretRef.Name {
				out = append(out, *v.DeepCopy())
			}
		}
	}
	return out
}

// setEnv replaces the env var of the same name or appends v.
func setEnv(env []corev1.EnvVar, v corev1.EnvVar) []corev1.EnvVar {
	for i := range env {
		if env[i].Name == v.Name {
			env[i] = v
			return env
		}
	}
	return append(env, v)
}

// hashOf is a stable hash of v's JSON encoding (struct fields in declaration order, map keys
// sorted), hex-encoded.
func hashOf(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		// Only types with no JSON encoding fail, and API types always have one.
		panic("hash: " + err.Error())
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:16])
}

// isOwnedBy is true when obj carries the managed-by label and names wl as its controller.
func isOwnedBy(obj metav1.Object, wl *polykubev1alpha1.Workload) bool {
	if obj.GetLabels()[polykubev1alpha1.ManagedByLabel] != polykubev1alpha1.ManagedByValue {
		return false
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	return ref != nil && ref.UID == wl.UID && ref.Kind == "Workload" &&
		ref.APIVersion == polykubev1alpha1.GroupVersion.String()
}
