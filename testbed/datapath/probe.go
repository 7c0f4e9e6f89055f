package datapath

import (
	"context"
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/wait"
)

// EchoPort is the port the echo server listens on; the global Service maps its port 80 to it.
const EchoPort = 8080

// EchoTemplate is the pod template of the echo server: it answers on EchoPort with the name
// of its cluster, which Flux substitutes for ${CLUSTER_NAME} when it applies the Workload.
func EchoTemplate(image string) corev1.PodTemplateSpec {
	return corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "polykube-echo"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:            "echo",
				Image:           image,
				ImagePullPolicy: corev1.PullIfNotPresent,
				Command:         []string{"/polykube-echo", "serve", "--listen=:" + strconv.Itoa(EchoPort)},
				Env: []corev1.EnvVar{
					{Name: "CLUSTER_NAME", Value: "${" + gitrepo.ClusterNameVar + "}"},
					{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
				},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: EchoPort}},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(EchoPort)},
				}},
				SecurityContext: &corev1.SecurityContext{
					RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
			}},
		},
	}
}

// ProbeURL is the URL a client in any cluster calls to reach the global Service. The name is
// absolute (a trailing dot), so the pod's DNS search list is not tried first: on a kind cluster
// here, every call to the relative name was answered with HTTP 404 by something other than the
// Service's pods (a search-list candidate resolved by the host's DNS), while every call to the
// absolute one reached them.
func ProbeURL(namespace, service string) string {
	return fmt.Sprintf("http://%s.%s.svc.cluster.local./", service, namespace)
}

// ProbeJob is a Job that calls the Service n times from the cluster it runs in and prints
// one JSON line per call (see ParseCalls).
func ProbeJob(namespace, service string, n int, image string) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "polykube-probe-" + service + "-",
			Namespace:    namespace,
			Labels:       map[string]string{"app.kubernetes.io/name": "polykube-probe"},
		},
		Spec: batchv1.JobSpec{
			BackoffLimit:            ptr.To[int32](0),
			TTLSecondsAfterFinished: ptr.To[int32](600),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app.kubernetes.io/name": "polykube-probe"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:            "client",
						Image:           image,
						ImagePullPolicy: corev1.PullIfNotPresent,
						Command: []string{"/polykube-echo", "call", "--url", ProbeURL(namespace, service),
							"--count", strconv.Itoa(n), "--timeout", "2s"},
						SecurityContext: &corev1.SecurityContext{
							RunAsNonRoot: ptr.To(true), AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
							Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
						},
					}},
				},
			},
		},
	}
}

// Call runs a probe Job in a member that calls namespace/service n times, and returns the
// answers in call order: the answering cluster's name, or "" for a call that failed. In a dry
// run it prints the Job and returns no answers.
func Call(ctx context.Context, e *Env, cluster, namespace, service string, n int) ([]string, error) {
	m, err := e.Member(cluster)
	if err != nil {
		return nil, err
	}
	job := ProbeJob(namespace, service, n, Image)
	if !e.Runner.Note("run in %s, then read its pod's log:\n%s", m.Context, mustYAML(job)) {
		return nil, nil
	}
	cl, err := e.Client(m)
	if err != nil {
		return nil, err
	}
	if err := cl.Create(ctx, job); err != nil {
		return nil, fmt.Errorf("create the probe Job in %s: %w", cluster, err)
	}
	defer func() {
		_ = cl.Delete(context.WithoutCancel(ctx), job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	}()
	what := fmt.Sprintf("probe Job %s/%s in %s to finish", namespace, job.Name, cluster)
	err = wait.For(ctx, e.wait(WaitProbe), what, func(ctx context.Context) error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		switch {
		case job.Status.Succeeded > 0:
			return nil
		case job.Status.Failed > 0:
			return wait.Stop(fmt.Errorf("the probe Job %s failed; its pod's log says why (kubectl --context %s -n %s logs job/%s)", job.Name, m.Context, namespace, job.Name))
		}
		return fmt.Errorf("%d active, %d succeeded", job.Status.Active, job.Status.Succeeded)
	})
	if err != nil {
		return nil, err
	}
	log, err := jobLog(ctx, m, job)
	if err != nil {
		return nil, err
	}
	return ParseCalls(log, n)
}

func jobLog(ctx context.Context, m Member, job *batchv1.Job) (string, error) {
	cfg, err := provider.RESTConfig(m.Kubeconfig, m.Context)
	if err != nil {
		return "", err
	}
	cfg.Timeout = 30 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	pods, err := cs.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "batch.kubernetes.io/job-name=" + job.Name})
	if err != nil {
		return "", fmt.Errorf("find the pod of probe Job %s: %w", job.Name, err)
	}
	if len(pods.Items) == 0 {
		return "", fmt.Errorf("probe Job %s has no pod", job.Name)
	}
	data, err := cs.CoreV1().Pods(job.Namespace).GetLogs(pods.Items[0].Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("read the log of %s: %w", pods.Items[0].Name, err)
	}
	return string(data), nil
}

// The echo workload of examples/echo.
const (
	EchoNamespace = "polykube-demo"
	EchoName      = "echo"
)
