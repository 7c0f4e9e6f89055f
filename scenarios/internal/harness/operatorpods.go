package harness

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
)

// Where a cluster's operator runs decides what "runs the release" means to the install
// scenarios. On a bed whose operators are host processes (kwok, which runs no pods: the host
// bed, testbed.OperatorBinaries) the test bed pulls the binary of the image the Deployment
// names and runs it as the cluster's operator. On a bed whose operators run in the clusters
// (kind, k0s: the in-cluster bed) the operator is the Deployment's pods, as on a user's
// cluster: an install is the Deployment's rollout, the kubelet pulls the image from the
// registry, a refusal to start is a container that exits and is restarted, and the pods
// that ran before are what the cluster keeps (the Deployment rolls by RollingUpdate with
// maxUnavailable 0 for its two replicas, so a new pod that never becomes ready replaces none).

// hostOperators is the bed's ability to run another operator binary per cluster, when its
// operators are host processes; false when they run as the Deployment's pods.
func (sc *Scenario) hostOperators() (testbed.OperatorBinaries, bool) {
	ob, ok := sc.Fed.Faults().(testbed.OperatorBinaries)
	return ob, ok
}

// operatorPod is a ready pod of the operator Deployment: what a cluster whose operator runs in
// it runs.
type operatorPod struct {
	name, uid, image, imageID string
}

func (p operatorPod) String() string {
	return fmt.Sprintf("%s (uid %s, image %s, imageID %s)", p.name, p.uid, p.image, p.imageID)
}

// operatorDeploymentAndPods is the cluster's operator Deployment and the pods its selector
// matches.
func (sc *Scenario) operatorDeploymentAndPods(ctx context.Context, cluster string) (*appsv1.Deployment, []corev1.Pod, error) {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return nil, nil, err
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment}, d); err != nil {
		return nil, nil, fmt.Errorf("get the operator Deployment in cluster %q: %w", cluster, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, nil, fmt.Errorf("the selector of the operator Deployment in cluster %q: %w", cluster, err)
	}
	pods := &corev1.PodList{}
	if err := c.List(ctx, pods, client.InNamespace(operatorNamespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, nil, fmt.Errorf("list the operator's pods in cluster %q: %w", cluster, err)
	}
	return d, pods.Items, nil
}

// readyOperatorPods are the cluster's operator pods that run and are ready; an error when none
// is: a cluster whose operator runs in pods runs none then.
func (sc *Scenario) readyOperatorPods(ctx context.Context, cluster string) ([]operatorPod, error) {
	_, pods, err := sc.operatorDeploymentAndPods(ctx, cluster)
	if err != nil {
		return nil, err
	}
	ready := readyPods(pods)
	if len(ready) == 0 {
		return nil, fmt.Errorf("no pod of the operator Deployment %s/%s is ready in cluster %q (%s)", operatorNamespace, operatorDeployment, cluster, describePods(pods))
	}
	return ready, nil
}

// readyPods are the pods that run, are ready and are not being deleted, with their operator
// container's image, sorted by name.
func readyPods(pods []corev1.Pod) []operatorPod {
	var out []operatorPod
	for _, p := range pods {
		if p.DeletionTimestamp != nil || p.Status.Phase != corev1.PodRunning || !podReady(p) {
			continue
		}
		op := operatorPod{name: p.Name, uid: string(p.UID)}
		if cs, ok := containerStatus(p, operatorContainer); ok {
			op.image, op.imageID = cs.Image, cs.ImageID
		}
		out = append(out, op)
	}
	slices.SortFunc(out, func(a, b operatorPod) int { return strings.Compare(a.name, b.name) })
	return out
}

func podReady(p corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

func containerStatus(p corev1.Pod, name string) (corev1.ContainerStatus, bool) {
	i := slices.IndexFunc(p.Status.ContainerStatuses, func(cs corev1.ContainerStatus) bool { return cs.Name == name })
	if i < 0 {
		return corev1.ContainerStatus{}, false
	}
	return p.Status.ContainerStatuses[i], true
}

// describePods says, for an error, each pod's phase and its operator container's state.
func describePods(pods []corev1.Pod) string {
	if len(pods) == 0 {
		return "no pod"
	}
	var parts []string
	for _, p := range pods {
		s := fmt.Sprintf("%s %s ready=%t", p.Name, p.Status.Phase, podReady(p))
		if cs, ok := containerStatus(p, operatorContainer); ok {
			switch {
			case cs.State.Waiting != nil:
				s += " waiting " + cs.State.Waiting.Reason
			case cs.State.Terminated != nil:
				s += fmt.Sprintf(" terminated exit %d", cs.State.Terminated.ExitCode)
			}
			s += fmt.Sprintf(" restarts %d image %s", cs.RestartCount, cs.Image)
		}
		if p.DeletionTimestamp != nil {
			s += " (being deleted)"
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, "; ")
}

// podsKept says how now differs from before: every pod that ran before must still run, ready,
// with the same UID and image (nil when it does).
func podsKept(before, now []operatorPod) error {
	var errs []error
	for _, b := range before {
		i := slices.IndexFunc(now, func(n operatorPod) bool { return n.uid == b.uid })
		switch {
		case i < 0:
			errs = append(errs, fmt.Errorf("the operator pod %s no longer runs ready", b))
		case now[i].imageID != b.imageID || now[i].image != b.image:
			errs = append(errs, fmt.Errorf("the operator pod %s runs %s now", b, now[i]))
		}
	}
	if len(before) == 0 {
		errs = append(errs, errors.New("no operator pod was recorded running before"))
	}
	return errors.Join(errs...)
}

// rolledOut says whether the Deployment's rollout is complete: every replica is of its current
// template and ready, no pod of an older one is left, and, when the template names its image
// by digest, every pod's operator container runs that digest (its imageID, the digest the
// kubelet pulled); digest, when not "", must be the template's (nil when all holds).
func rolledOut(d *appsv1.Deployment, pods []corev1.Pod, digest string) error {
	i := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == operatorContainer })
	if i < 0 {
		return fmt.Errorf("Deployment %s has no container %q", d.Name, operatorContainer)
	}
	image := d.Spec.Template.Spec.Containers[i].Image
	_, pinned, byDigest := strings.Cut(image, "@")
	if digest != "" && pinned != digest {
		return fmt.Errorf("Deployment %s names the image %s, not the digest %s", d.Name, image, digest)
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	st := d.Status
	if st.ObservedGeneration < d.Generation || st.UpdatedReplicas != want || st.AvailableReplicas != want || st.Replicas != want {
		return fmt.Errorf("Deployment %s rolling out: generation %d observed %d, %d replicas wanted, %d updated, %d available, %d in all (pods: %s)",
			d.Name, d.Generation, st.ObservedGeneration, want, st.UpdatedReplicas, st.AvailableReplicas, st.Replicas, describePods(pods))
	}
	ready := readyPods(pods)
	if int32(len(ready)) != want {
		return fmt.Errorf("Deployment %s: %d of %d pods ready (pods: %s)", d.Name, len(ready), want, describePods(pods))
	}
	if !byDigest {
		return nil
	}
	var errs []error
	for _, p := range ready {
		if !strings.HasSuffix(p.imageID, "@"+pinned) {
			errs = append(errs, fmt.Errorf("the operator pod %s runs the image %s, not the digest %s its Deployment names", p.name, p.imageID, pinned))
		}
	}
	return errors.Join(errs...)
}

// refusedPod finds a pod of the Deployment's current template (its image, not one of before)
// whose operator container exited with a failure and never became ready: the container that
// refused to start. It returns the pod and whether its refusal's log is the previous run's
// (the container was restarted since); ok is false while there is none.
func refusedPod(d *appsv1.Deployment, pods []corev1.Pod, before []operatorPod) (pod corev1.Pod, previous, ok bool) {
	i := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == operatorContainer })
	if i < 0 {
		return corev1.Pod{}, false, false
	}
	image := d.Spec.Template.Spec.Containers[i].Image
	for _, p := range pods {
		if slices.ContainsFunc(before, func(b operatorPod) bool { return b.uid == string(p.UID) }) {
			continue
		}
		if j := slices.IndexFunc(p.Spec.Containers, func(c corev1.Container) bool { return c.Name == operatorContainer }); j < 0 || p.Spec.Containers[j].Image != image {
			continue
		}
		cs, found := containerStatus(p, operatorContainer)
		if !found || cs.Ready {
			continue
		}
		switch {
		case cs.State.Terminated != nil && cs.State.Terminated.ExitCode != 0:
			return p, false, true
		case cs.LastTerminationState.Terminated != nil && cs.LastTerminationState.Terminated.ExitCode != 0:
			return p, true, true
		}
	}
	return corev1.Pod{}, false, false
}

// checkOperatorPodRefuses waits until a new pod of the cluster's operator Deployment has
// refused to start (its container exited with a failure, never ready), and checks that its log
// says each of want.
func (sc *Scenario) checkOperatorPodRefuses(ctx context.Context, cluster string, before []operatorPod, want []string) error {
	admin, err := sc.Fed.AdminConfig(cluster)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(admin)
	if err != nil {
		return err
	}
	var refused corev1.Pod
	var previous bool
	if err := Await(ctx, sc.Config.Wait(WaitDelivery), fmt.Sprintf("a new pod of the operator Deployment in cluster %q to refuse to start", cluster), func(ctx context.Context) error {
		d, pods, err := sc.operatorDeploymentAndPods(ctx, cluster)
		if err != nil {
			return err
		}
		var ok bool
		if refused, previous, ok = refusedPod(d, pods, before); !ok {
			return fmt.Errorf("no new pod's operator container exited with a failure yet (pods: %s)", describePods(pods))
		}
		return nil
	}); err != nil {
		return err
	}
	data, err := cs.CoreV1().Pods(refused.Namespace).GetLogs(refused.Name, &corev1.PodLogOptions{Container: operatorContainer, Previous: previous}).DoRaw(ctx)
	if err != nil {
		return fmt.Errorf("read the log of the operator pod %s in cluster %q (previous run: %t): %w", refused.Name, cluster, previous, err)
	}
	var errs []error
	for _, w := range want {
		if !strings.Contains(string(data), w) {
			errs = append(errs, fmt.Errorf("the operator pod %s of cluster %q refused to start without saying %q:\n%s", refused.Name, cluster, w, data))
		}
	}
	return errors.Join(errs...)
}

// awaitOperatorRollout waits until the cluster's operator Deployment has rolled out: every
// replica of its current template ready, none of an older one left, each running the
// template's image, pulled by digest when digest is not "".
func (sc *Scenario) awaitOperatorRollout(ctx context.Context, w, cluster, digest string) error {
	what := fmt.Sprintf("the operator Deployment %s/%s in cluster %q to roll out", operatorNamespace, operatorDeployment, cluster)
	if digest != "" {
		what += ", its pods running the image " + digest
	}
	return Await(ctx, sc.Config.Wait(w), what, func(ctx context.Context) error {
		d, pods, err := sc.operatorDeploymentAndPods(ctx, cluster)
		if err != nil {
			return err
		}
		return rolledOut(d, pods, digest)
	})
}

// restoreOwnOperator runs the run's own operator in the cluster again, once Flux applied Git's
// operator: on the host bed it restarts the run's own binary (unless it runs already, when
// ifSwapped); in the clusters it waits until the Deployment Flux applied has rolled out.
func (sc *Scenario) restoreOwnOperator(ctx context.Context, cluster string, ifSwapped bool) error {
	ob, host := sc.hostOperators()
	if !host {
		return sc.awaitOperatorRollout(ctx, WaitCleanup, cluster, "")
	}
	if _, own := ob.OperatorBinary(cluster); own && ifSwapped {
		return nil
	}
	return ob.UseOperator(ctx, cluster, "")
}
