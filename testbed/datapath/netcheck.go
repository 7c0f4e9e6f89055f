package datapath

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// NetCheckNamespace holds the network check's echo server and Service in every cluster while
// the check runs.
const (
	NetCheckNamespace = "polykube-netcheck"
	NetCheckName      = "echo"
	// NetCheckCalls is how many calls the check makes from a pod in each cluster.
	NetCheckCalls = 10
)

// CheckServices proves each member's pod network and Service routing: in every member it runs
// the echo server behind a ClusterIP Service, then a client pod that calls the Service by its
// DNS name NetCheckCalls times; every call must be answered, and by the member itself (a Service
// that is not global never leaves its cluster). CoreDNS, kube-proxy or Cilium's service load
// balancing, and the CNI all take part. The namespace is deleted afterwards.
func CheckServices(ctx context.Context, e *Env) error {
	return e.each(func(m Member) error { return checkService(ctx, e, m) })
}

func checkService(ctx context.Context, e *Env, m Member) error {
	tmpl := EchoTemplate(e.PolykubeImage())
	tmpl.Spec.Containers[0].Env[0] = corev1.EnvVar{Name: "CLUSTER_NAME", Value: m.Name} // no operator labels these pods
	labels := map[string]string{"app.kubernetes.io/name": "polykube-netcheck"}
	tmpl.Labels = labels
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: NetCheckNamespace}}
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: NetCheckName, Namespace: NetCheckNamespace},
		Spec:       appsv1.DeploymentSpec{Replicas: ptr.To[int32](2), Selector: &metav1.LabelSelector{MatchLabels: labels}, Template: tmpl},
	}
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: NetCheckName, Namespace: NetCheckNamespace},
		Spec:       corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(EchoPort)}}},
	}
	if !e.Runner.Note("in %s: Deployment and Service %s/%s (the echo server, 2 replicas), then %d calls to %s from a probe pod, each answered by %s; delete namespace %s",
		m.Context, NetCheckNamespace, NetCheckName, NetCheckCalls, ProbeURL(NetCheckNamespace, NetCheckName), m.Name, NetCheckNamespace) {
		return nil
	}
	cl, err := e.Client(m)
	if err != nil {
		return err
	}
	for _, obj := range []client.Object{ns, dep, svc} {
		if err := cl.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create %s %s: %w", obj.GetObjectKind().GroupVersionKind().Kind, obj.GetName(), err)
		}
	}
	defer func() {
		_ = cl.Delete(context.WithoutCancel(ctx), ns)
	}()
	if err := wait.For(ctx, e.wait(topology.WaitRollout), "the network check's echo server in "+m.Name+" to be available", func(ctx context.Context) error {
		return deploymentAvailable(ctx, cl, NetCheckNamespace, NetCheckName)
	}); err != nil {
		return err
	}
	answers, err := Call(ctx, e, m.Name, NetCheckNamespace, NetCheckName, NetCheckCalls)
	if err != nil {
		return err
	}
	var wrong []string
	for i, a := range answers {
		if a != m.Name {
			if a == "" {
				a = "no answer"
			}
			wrong = append(wrong, fmt.Sprintf("call %d: %s", i+1, a))
		}
	}
	if len(wrong) > 0 {
		return fmt.Errorf("a pod in %s calling Service %s/%s: %d of %d calls not answered by %s (%s); the pod network or the Service routing of %s does not work (polykube-testbed logs has Cilium's and the nodes' logs)",
			m.Name, NetCheckNamespace, NetCheckName, len(wrong), len(answers), m.Name, strings.Join(wrong, ", "), m.Name)
	}
	fmt.Fprintf(e.Out, "   %s: %d of %d calls to Service %s/%s answered by %s\n", m.Name, len(answers), NetCheckCalls, NetCheckNamespace, NetCheckName, m.Name)
	return nil
}

// PulledImages lists, per member, the images kubelet reported pulling (its "Pulling" events):
// with local images there must be none, which is how a run shows that nothing was pulled.
func PulledImages(ctx context.Context, e *Env) (map[string][]string, error) {
	out := map[string][]string{}
	err := e.each(func(m Member) error {
		cl, err := e.Client(m)
		if err != nil {
			return err
		}
		var evs corev1.EventList
		if err := cl.List(ctx, &evs); err != nil {
			return err
		}
		for _, ev := range evs.Items {
			if ev.Reason == "Pulling" {
				out[m.Name] = append(out[m.Name], fmt.Sprintf("%s/%s: %s", ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.Message))
			}
		}
		return nil
	})
	return out, err
}
