package incluster

import (
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

func TestImpersonatorPod_IsTheOperatorsTemplateUnderAnotherName(t *testing.T) {
	g := NewWithT(t)
	sel := map[string]string{"app.kubernetes.io/name": "polykube-operator"}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "polykube-operator", Namespace: "polykube-system"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: sel},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: sel},
				Spec: corev1.PodSpec{
					ServiceAccountName: "polykube-operator",
					Containers: []corev1.Container{{
						Name: "operator", Image: "polykube.local/polykube:e2e",
						Args:           []string{"--cluster-name=alpha", "--leader-elect"},
						LivenessProbe:  &corev1.Probe{},
						ReadinessProbe: &corev1.Probe{},
					}},
				},
			},
		},
	}
	pod, err := impersonatorPod(d, "gamma")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(pod.Name).To(Equal("polykube-operator-as-gamma"))
	g.Expect(pod.Namespace).To(Equal("polykube-system"))
	g.Expect(pod.Spec.ServiceAccountName).To(Equal("polykube-operator"), "the operator's own credentials")
	g.Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
	c := pod.Spec.Containers[0]
	g.Expect(c.Args).To(Equal([]string{"--cluster-name=gamma", "--leader-elect"}))
	g.Expect(c.LivenessProbe).To(BeNil())
	g.Expect(c.ReadinessProbe).To(BeNil())
	g.Expect(labels.SelectorFromSet(sel).Matches(labels.Set(pod.Labels))).To(BeFalse(), "the ReplicaSet must not adopt it")
	g.Expect(d.Spec.Template.Spec.Containers[0].Args[0]).To(Equal("--cluster-name=alpha"), "the Deployment is left as it is")

	d.Spec.Template.Spec.Containers[0].Args = []string{"--leader-elect"}
	_, err = impersonatorPod(d, "gamma")
	g.Expect(err).To(MatchError(ContainSubstring("--cluster-name")))
}
