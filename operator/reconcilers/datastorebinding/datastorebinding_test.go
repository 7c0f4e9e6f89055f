package datastorebinding

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func binding(prefix string, containers ...string) *polykubev1alpha1.DatastoreBinding {
	return &polykubev1alpha1.DatastoreBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db", Generation: 2},
		Spec: polykubev1alpha1.DatastoreBindingSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"},
			SecretRef:   polykubev1alpha1.LocalSecretReference{Name: "db-creds"},
			Prefix:      prefix,
			Env: []polykubev1alpha1.EnvFromSecretKey{
				{Name: "HOST", Key: "host"}, {Name: "PASSWORD", Key: "password"}, {Name: "PASS", Key: "password"},
			},
			Containers: containers,
		},
	}
}

func TestResolveKeys(t *testing.T) {
	secret := func(keys ...string) *corev1.Secret {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-creds"}, Data: map[string][]byte{}}
		for _, k := range keys {
			s.Data[k] = []byte("s3cr3t-" + k)
		}
		return s
	}
	tests := []struct {
		name        string
		secret      *corev1.Secret
		wantReason  string
		wantMissing []string
	}{
		{"every key present", secret("host", "password", "extra"), "", nil},
		{"one key missing", secret("host"), polykubev1alpha1.ReasonSecretKeyMissing, []string{"password"}},
		{"all keys missing", secret(), polykubev1alpha1.ReasonSecretKeyMissing, []string{"host", "password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res := resolveKeys(binding(""), tt.secret)
			g.Expect(res.Reason).To(Equal(tt.wantReason))
			g.Expect(res.OK()).To(Equal(tt.wantReason == ""))
			g.Expect(res.MissingKeys).To(Equal(tt.wantMissing))
			for _, k := range tt.wantMissing {
				g.Expect(res.Message).To(ContainSubstring(k))
			}
			if !res.OK() {
				g.Expect(res.Message).To(ContainSubstring("shop/db-creds"))
			}
			g.Expect(res.Message).NotTo(ContainSubstring("s3cr3t"), "a message never carries a Secret value")
		})
	}
}

func TestEnvVarsAndAppliesTo(t *testing.T) {
	g := NewWithT(t)
	b := binding("DB_", "app")
	g.Expect(EnvNames(b)).To(Equal([]string{"DB_HOST", "DB_PASSWORD", "DB_PASS"}))
	vars := EnvVars(b)
	g.Expect(vars).To(HaveLen(3))
	g.Expect(vars[1].Value).To(BeEmpty())
	g.Expect(vars[1].ValueFrom.SecretKeyRef.Name).To(Equal("db-creds"))
	g.Expect(vars[1].ValueFrom.SecretKeyRef.Key).To(Equal("password"))
	g.Expect(AppliesTo(b, "app")).To(BeTrue())
	g.Expect(AppliesTo(b, "sidecar")).To(BeFalse())
	g.Expect(AppliesTo(binding(""), "sidecar")).To(BeTrue(), "no containers listed means all")
	g.Expect(neededKeys(b)).To(Equal([]string{"host", "password"}))
}

func TestForWorkload(t *testing.T) {
	mk := func(name, wl string) polykubev1alpha1.DatastoreBinding {
		b := binding("")
		b.Name, b.Spec.WorkloadRef.Name = name, wl
		return *b
	}
	got := ForWorkload([]polykubev1alpha1.DatastoreBinding{mk("z", "api"), mk("b", "other"), mk("a", "api")}, "api")
	NewWithT(t).Expect([]string{got[0].Name, got[1].Name}).To(Equal([]string{"a", "z"}))
	NewWithT(t).Expect(got).To(HaveLen(2))
}

func TestWiredEnv(t *testing.T) {
	b := binding("DB_", "app")
	deployment := func(containers ...corev1.Container) *appsv1.Deployment {
		d := &appsv1.Deployment{}
		d.Spec.Template.Spec.Containers = containers
		return d
	}
	all := EnvVars(b)
	wrongKey := all[0].DeepCopy()
	wrongKey.ValueFrom.SecretKeyRef.Key = "other"
	tests := []struct {
		name         string
		dep          *appsv1.Deployment
		wantWired    []string
		wantComplete bool
	}{
		{"no Deployment", nil, nil, false},
		{"nothing wired", deployment(corev1.Container{Name: "app"}), nil, false},
		{"every var in the listed container", deployment(corev1.Container{Name: "app", Env: all}, corev1.Container{Name: "sidecar"}),
			[]string{"DB_HOST", "DB_PASS", "DB_PASSWORD"}, true},
		{"some vars", deployment(corev1.Container{Name: "app", Env: all[1:]}), []string{"DB_PASS", "DB_PASSWORD"}, false},
		{"a var pointing at another key is not wired", deployment(corev1.Container{Name: "app", Env: append([]corev1.EnvVar{*wrongKey}, all[1:]...)}),
			[]string{"DB_PASS", "DB_PASSWORD"}, false},
		{"a plain value is not wired", deployment(corev1.Container{Name: "app", Env: append([]corev1.EnvVar{{Name: "DB_HOST", Value: "x"}}, all[1:]...)}),
			[]string{"DB_PASS", "DB_PASSWORD"}, false},
		{"no container the binding applies to", deployment(corev1.Container{Name: "sidecar", Env: all}), nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			wired, complete := wiredEnv(b, tt.dep)
			g.Expect(wired).To(Equal(tt.wantWired))
			g.Expect(complete).To(Equal(tt.wantComplete))
		})
	}
}

func TestSetBound(t *testing.T) {
	tests := []struct {
		status    metav1.ConditionStatus
		reason    string
		wantReady metav1.ConditionStatus
	}{
		{metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded, metav1.ConditionTrue},
		{metav1.ConditionFalse, polykubev1alpha1.ReasonSecretNotFound, metav1.ConditionFalse},
		{metav1.ConditionFalse, polykubev1alpha1.ReasonSecretKeyMissing, metav1.ConditionFalse},
		{metav1.ConditionFalse, polykubev1alpha1.ReasonNotTargeted, metav1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.reason, func(t *testing.T) {
			g := NewWithT(t)
			b := binding("")
			setBound(b, tt.status, tt.reason, "msg")
			bound := meta.FindStatusCondition(b.Status.Conditions, polykubev1alpha1.BoundCondition)
			ready := meta.FindStatusCondition(b.Status.Conditions, polykubev1alpha1.ReadyCondition)
			g.Expect(bound.Status).To(Equal(tt.status))
			g.Expect(ready.Status).To(Equal(tt.wantReady))
			g.Expect(bound.Reason).To(Equal(tt.reason))
			g.Expect(ready.Reason).To(Equal(tt.reason))
			g.Expect(ready.ObservedGeneration).To(Equal(int64(2)))
		})
	}
}

func TestMissingContainers(t *testing.T) {
	wl := &polykubev1alpha1.Workload{}
	wl.Spec.Template.Spec.Containers = []corev1.Container{{Name: "app"}}
	NewWithT(t).Expect(missingContainers(binding("", "app", "worker"), wl)).To(Equal([]string{"worker"}))
	NewWithT(t).Expect(missingContainers(binding(""), wl)).To(BeEmpty())
}
