package incluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

var _ testbed.OperatorImpersonation = (*Bed)(nil)

// impersonatorLabel marks the one-off pod StartOperatorAs runs; it is not the Deployment's
// selector, so the operator's ReplicaSet (scaled to 0) does not adopt and delete it.
const impersonatorLabel = "testbed.polykube.kismet.io/operator-as"

// StartOperatorAs runs the cluster's (stopped) operator once in the cluster under another
// member's --cluster-name, as a Flux entry point copied from another cluster would: a pod of
// the operator Deployment's own template (its image, ServiceAccount and so its RBAC, its
// arguments but that one), restarted never. It returns the pod's log once the pod has ended,
// and testbed.ErrOperatorRan when it is still running after the probe wait or ended without
// an error. The pod is deleted afterwards.
func (b *Bed) StartOperatorAs(ctx context.Context, cluster, clusterName string) (string, error) {
	m, err := b.env.Member(cluster)
	if err != nil {
		return "", err
	}
	op := b.state.Operator
	if op.Name == "" {
		return "", fmt.Errorf("this run of the in-cluster bed knows no operator Deployment; was it brought up (polykube-testbed up --provider %s)?", b.state.Topology.Provider)
	}
	cl, err := b.env.Client(m)
	if err != nil {
		return "", err
	}
	var d appsv1.Deployment
	if err := cl.Get(ctx, client.ObjectKey{Namespace: op.Namespace, Name: op.Name}, &d); err != nil {
		return "", fmt.Errorf("get the operator Deployment of cluster %s: %w", cluster, err)
	}
	if ptrOr(d.Spec.Replicas, 1) != 0 {
		return "", fmt.Errorf("the operator of cluster %s is running: stop it first (fault stop operator)", cluster)
	}
	pod, err := impersonatorPod(&d, clusterName)
	if err != nil {
		return "", fmt.Errorf("the operator Deployment of cluster %s: %w", cluster, err)
	}
	// A pod left by an interrupted run goes first.
	if err := b.deletePodAndWait(ctx, cl, pod.Namespace, pod.Name); err != nil {
		return "", err
	}
	if err := cl.Create(ctx, pod); err != nil {
		return "", fmt.Errorf("create pod %s/%s in cluster %s: %w", pod.Namespace, pod.Name, cluster, err)
	}
	defer func() {
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		_ = b.deletePodAndWait(dctx, cl, pod.Namespace, pod.Name)
	}()

	w := b.env.Topology.Wait(topology.WaitProbe)
	var phase corev1.PodPhase
	waitErr := wait.For(ctx, w, fmt.Sprintf("the operator of %s started as %q to end", cluster, clusterName), func(ctx context.Context) error {
		var p corev1.Pod
		if err := cl.Get(ctx, client.ObjectKeyFromObject(pod), &p); err != nil {
			return err
		}
		phase = p.Status.Phase
		if phase == corev1.PodSucceeded || phase == corev1.PodFailed {
			return nil
		}
		return fmt.Errorf("pod %s is %s", p.Name, phase)
	})
	logs, logErr := datapath.PodLog(ctx, m, pod.Namespace, pod.Name)
	switch {
	case waitErr != nil && phase == corev1.PodRunning:
		return logs, fmt.Errorf("%w: started as %q in cluster %s, it was still running after %s", testbed.ErrOperatorRan, clusterName, cluster, w.Timeout.Duration)
	case waitErr != nil:
		return logs, waitErr
	case logErr != nil:
		return "", logErr
	case phase == corev1.PodSucceeded:
		return logs, fmt.Errorf("%w: started as %q in cluster %s, it exited without an error", testbed.ErrOperatorRan, clusterName, cluster)
	}
	return logs, nil
}

// impersonatorPod is a pod of the Deployment's template whose containers' --cluster-name is
// clusterName, without probes (nothing is to be restarted or served) and never restarted.
func impersonatorPod(d *appsv1.Deployment, clusterName string) (*corev1.Pod, error) {
	spec := d.Spec.Template.Spec.DeepCopy()
	spec.RestartPolicy = corev1.RestartPolicyNever
	found := false
	for i := range spec.Containers {
		c := &spec.Containers[i]
		c.LivenessProbe, c.ReadinessProbe, c.StartupProbe = nil, nil, nil
		for j, a := range c.Args {
			if strings.HasPrefix(a, "--cluster-name=") {
				c.Args[j] = "--cluster-name=" + clusterName
				found = true
			}
		}
	}
	if !found {
		return nil, errors.New("no container has a --cluster-name=… argument")
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:      d.Name + "-as-" + clusterName,
			Namespace: d.Namespace,
			Labels:    map[string]string{impersonatorLabel: clusterName},
		},
		Spec: *spec,
	}, nil
}

// deletePodAndWait deletes a pod at once (no grace period) and waits until it is gone; a
// missing pod is fine.
func (b *Bed) deletePodAndWait(ctx context.Context, cl client.Client, namespace, name string) error {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}
	if err := cl.Delete(ctx, pod, client.GracePeriodSeconds(0)); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete pod %s/%s: %w", namespace, name, err)
	}
	return wait.For(ctx, b.env.Topology.Wait(topology.WaitProbe), fmt.Sprintf("pod %s/%s to be gone", namespace, name), func(ctx context.Context) error {
		err := cl.Get(ctx, client.ObjectKeyFromObject(pod), &corev1.Pod{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("still there")
	})
}
