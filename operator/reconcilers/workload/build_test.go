package workload

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func testWorkload() *polykubev1alpha1.Workload {
	return &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api", UID: types.UID("wl-uid")},
		Spec: polykubev1alpha1.WorkloadSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"tier": "backend", polykubev1alpha1.WorkloadNameLabel: "spoofed"}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{
					{Name: "app", Image: "app:1", Env: []corev1.EnvVar{{Name: "DB_HOST", Value: "template"}, {Name: "MODE", Value: "prod"}}},
					{Name: "sidecar", Image: "sidecar:1"},
				}},
			},
		},
	}
}

func testBinding(name, secret, prefix string, containers ...string) *polykubev1alpha1.DatastoreBinding {
	return &polykubev1alpha1.DatastoreBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: name},
		Spec: polykubev1alpha1.DatastoreBindingSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"},
			SecretRef:   polykubev1alpha1.LocalSecretReference{Name: secret},
			Prefix:      prefix,
			Env:         []polykubev1alpha1.EnvFromSecretKey{{Name: "HOST", Key: "host"}, {Name: "PASSWORD", Key: "password"}},
			Containers:  containers,
		},
	}
}

func secretRef(name, secret, key string) corev1.EnvVar {
	return corev1.EnvVar{Name: name, ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
		LocalObjectReference: corev1.LocalObjectReference{Name: secret}, Key: key}}}
}

func TestDesiredDeployment(t *testing.T) {
	g := NewWithT(t)
	wl := testWorkload()
	d := desiredDeployment(wl, wl.Spec.Template, "east", 3, nil, nil)

	g.Expect(d.Name).To(Equal("api"))
	g.Expect(d.Namespace).To(Equal("shop"))
	g.Expect(*d.Spec.Replicas).To(Equal(int32(3)))
	g.Expect(d.Labels).To(Equal(map[string]string{
		polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.WorkloadNameLabel: "api",
		polykubev1alpha1.ClusterLabel: "east",
	}))
	g.Expect(d.Spec.Selector.MatchLabels).To(Equal(map[string]string{polykubev1alpha1.WorkloadNameLabel: "api"}))
	g.Expect(d.Spec.Template.Labels).To(Equal(map[string]string{"tier": "backend", polykubev1alpha1.WorkloadNameLabel: "api",
		polykubev1alpha1.ClusterLabel: "east"}),
		"template labels are merged, the selector label wins, and the pods carry their cluster's name")
	g.Expect(d.OwnerReferences).To(HaveLen(1))
	g.Expect(d.OwnerReferences[0].UID).To(Equal(wl.UID))
	g.Expect(*d.OwnerReferences[0].Controller).To(BeTrue())
	g.Expect(isOwnedBy(d, wl)).To(BeTrue())
	g.Expect(d.Annotations).To(HaveKey(TemplateHashAnnotation))
	g.Expect(wl.Spec.Template.Labels[polykubev1alpha1.WorkloadNameLabel]).To(Equal("spoofed"), "the Workload is not modified")

	zero := desiredDeployment(wl, wl.Spec.Template, "east", 0, nil, nil)
	g.Expect(*zero.Spec.Replicas).To(BeZero())
	g.Expect(zero.Annotations).To(Equal(d.Annotations), "replicas are not part of the template hash")

	changed := testWorkload()
	changed.Spec.Template.Spec.Containers[0].Image = "app:2"
	g.Expect(desiredDeployment(changed, changed.Spec.Template, "east", 3, nil, nil).Annotations).NotTo(Equal(d.Annotations))
}

func TestIsOwnedBy(t *testing.T) {
	wl := testWorkload()
	other := testWorkload()
	other.UID = "other"
	mine := desiredDeployment(wl, wl.Spec.Template, "east", 1, nil, nil)
	unlabelled := mine.DeepCopy()
	delete(unlabelled.Labels, polykubev1alpha1.ManagedByLabel)
	foreign := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "api", Namespace: "shop"}}
	tests := []struct {
		name string
		obj  metav1.Object
		wl   *polykubev1alpha1.Workload
		want bool
	}{
		{"created for this Workload", mine, wl, true},
		{"created for another Workload of the same name (recreated)", mine, other, false},
		{"owner reference but no managed-by label", unlabelled, wl, false},
		{"created by someone else", foreign, wl, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			NewWithT(t).Expect(isOwnedBy(tt.obj, tt.wl)).To(Equal(tt.want))
		})
	}
}

func TestInjectEnv(t *testing.T) {
	db := testBinding("db", "db-creds", "DB_")
	cache := testBinding("cache", "cache-creds", "CACHE_", "sidecar")
	existing := desiredDeployment(testWorkload(), testWorkload().Spec.Template, "east", 1, []binding{{db, true}, {cache, true}}, nil)

	tests := []struct {
		name     string
		bindings []binding
		existing *appsv1.Deployment
		want     map[string][]corev1.EnvVar // container -> env
	}{
		{
			name:     "no bindings: template env only",
			bindings: nil,
			want: map[string][]corev1.EnvVar{
				"app":     {{Name: "DB_HOST", Value: "template"}, {Name: "MODE", Value: "prod"}},
				"sidecar": nil,
			},
		},
		{
			name:     "resolved binding: secretKeyRef into every container, replacing a template var of the same name",
			bindings: []binding{{db, true}},
			want: map[string][]corev1.EnvVar{
				"app":     {secretRef("DB_HOST", "db-creds", "host"), {Name: "MODE", Value: "prod"}, secretRef("DB_PASSWORD", "db-creds", "password")},
				"sidecar": {secretRef("DB_HOST", "db-creds", "host"), secretRef("DB_PASSWORD", "db-creds", "password")},
			},
		},
		{
			name:     "two bindings, one variable: the first applied (established first) keeps it",
			bindings: []binding{{db, true}, {testBinding("db-again", "other-creds", "DB_"), true}},
			want: map[string][]corev1.EnvVar{
				"app":     {secretRef("DB_HOST", "db-creds", "host"), {Name: "MODE", Value: "prod"}, secretRef("DB_PASSWORD", "db-creds", "password")},
				"sidecar": {secretRef("DB_HOST", "db-creds", "host"), secretRef("DB_PASSWORD", "db-creds", "password")},
			},
		},
		{
			name:     "an unresolved first binding still claims its variables",
			bindings: []binding{{db, false}, {testBinding("db-again", "other-creds", "DB_"), true}},
			want: map[string][]corev1.EnvVar{
				"app":     {{Name: "DB_HOST", Value: "template"}, {Name: "MODE", Value: "prod"}},
				"sidecar": nil,
			},
		},
		{
			name:     "binding limited to listed containers",
			bindings: []binding{{cache, true}},
			want: map[string][]corev1.EnvVar{
				"app":     {{Name: "DB_HOST", Value: "template"}, {Name: "MODE", Value: "prod"}},
				"sidecar": {secretRef("CACHE_HOST", "cache-creds", "host"), secretRef("CACHE_PASSWORD", "cache-creds", "password")},
			},
		},
		{
			name:     "unresolved binding, nothing injected before: adds nothing",
			bindings: []binding{{db, false}},
			want: map[string][]corev1.EnvVar{
				"app":     {{Name: "DB_HOST", Value: "template"}, {Name: "MODE", Value: "prod"}},
				"sidecar": nil,
			},
		},
		{
			name:     "unresolved binding: what it injected before stays as it is",
			bindings: []binding{{db, false}, {cache, false}},
			existing: existing,
			want: map[string][]corev1.EnvVar{
				"app":     {secretRef("DB_HOST", "db-creds", "host"), {Name: "MODE", Value: "prod"}, secretRef("DB_PASSWORD", "db-creds", "password")},
				"sidecar": {secretRef("DB_HOST", "db-creds", "host"), secretRef("DB_PASSWORD", "db-creds", "password"), secretRef("CACHE_HOST", "cache-creds", "host"), secretRef("CACHE_PASSWORD", "cache-creds", "password")},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			d := desiredDeployment(testWorkload(), testWorkload().Spec.Template, "east", 1, tt.bindings, tt.existing)
			got := map[string][]corev1.EnvVar{}
			for _, c := range d.Spec.Template.Spec.Containers {
				got[c.Name] = c.Env
			}
			g.Expect(got).To(Equal(tt.want))
		})
	}

	t.Run("carrying over keeps the Deployment's template hash", func(t *testing.T) {
		g := NewWithT(t)
		again := desiredDeployment(testWorkload(), testWorkload().Spec.Template, "east", 1, []binding{{db, false}, {cache, false}}, existing)
		g.Expect(again.Annotations).To(Equal(existing.Annotations))
		g.Expect(again.Spec.Template).To(Equal(existing.Spec.Template))
	})
}

func TestDesiredService(t *testing.T) {
	g := NewWithT(t)
	wl := testWorkload()
	g.Expect(desiredService(wl, "east")).To(BeNil(), "no ports, no Service")

	wl.Spec.Ports = []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80, TargetPort: 8080}, {Name: "dns", Port: 53, Protocol: corev1.ProtocolUDP}}
	s := desiredService(wl, "east")
	g.Expect(s.Name).To(Equal("api"))
	g.Expect(s.Spec.Type).To(Equal(corev1.ServiceTypeClusterIP))
	g.Expect(s.Spec.Selector).To(Equal(map[string]string{polykubev1alpha1.WorkloadNameLabel: "api"}))
	g.Expect(s.Spec.Ports).To(Equal([]corev1.ServicePort{
		{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP},
		{Name: "dns", Port: 53, TargetPort: intstr.FromInt32(53), Protocol: corev1.ProtocolUDP},
	}))
	g.Expect(isOwnedBy(s, wl)).To(BeTrue())
}
