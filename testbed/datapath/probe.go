package datapath

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// EchoPort is the port the echo server listens on; the global Service maps its port 80 to it.
const EchoPort = 8080

// EchoTemplate is the pod template of the echo server: it answers on EchoPort with the name
// of its cluster, read from the cluster label the Polykube operator puts on every pod it runs
// (the downward API), so that the Workload's spec is the same in every cluster.
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
					{Name: "CLUSTER_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
						FieldPath: "metadata.labels['" + polykubev1alpha1.ClusterLabel + "']"}}},
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
	return clientJob(namespace, "polykube-probe-"+service+"-", image,
		"/polykube-echo", "call", "--url", ProbeURL(namespace, service), "--count", strconv.Itoa(n), "--timeout", "2s")
}

// PayloadJob is a Job whose pod calls the global Service n times, as ProbeJob does, each answer
// carrying bytes bytes after its first line, checked byte by byte: a call across clusters large
// enough to need many full-size segments, which a tunnel with too large an MTU would lose.
func PayloadJob(namespace, service string, n int, bytes int64, image string) *batchv1.Job {
	return clientJob(namespace, "polykube-payload-"+service+"-", image,
		"/polykube-echo", "call", "--url", ProbeURL(namespace, service), "--count", strconv.Itoa(n),
		"--bytes", strconv.FormatInt(bytes, 10), "--timeout", "60s")
}

// CallPayload runs PayloadJob in the cluster and returns every call's record.
func CallPayload(ctx context.Context, e *Env, cluster, namespace, service string, n int, bytes int64) ([]CallRecord, error) {
	log, ran, err := runProbe(ctx, e, cluster, PayloadJob(namespace, service, n, bytes, e.PolykubeImage()))
	if err != nil || !ran {
		return nil, err
	}
	return ParseCallRecords(log, n)
}

// GitReachJob is a Job that fetches the Git server's smart-HTTP entry point once, as Flux's
// source-controller will, from a pod of the cluster it runs in.
func GitReachJob(namespace, gitURL, image string) *batchv1.Job {
	return clientJob(namespace, "polykube-git-reach-", image,
		"/polykube-echo", "reach", "--url", strings.TrimSuffix(gitURL, "/")+"/info/refs?service=git-upload-pack", "--timeout", "5s")
}

// clientJob is a Job of one non-root pod running command once, never retried.
func clientJob(namespace, generateName, image string, command ...string) *batchv1.Job {
	return &batchv1.Job{
		TypeMeta: metav1.TypeMeta{APIVersion: "batch/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: generateName,
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
						Command:         command,
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
	log, ran, err := runProbe(ctx, e, cluster, ProbeJob(namespace, service, n, e.PolykubeImage()))
	if err != nil || !ran {
		return nil, err
	}
	return ParseCalls(log, n)
}

// runProbe runs a client Job in a member and returns its pod's log; ran is false in a dry run,
// which prints the Job instead.
func runProbe(ctx context.Context, e *Env, cluster string, job *batchv1.Job) (log string, ran bool, err error) {
	m, err := e.Member(cluster)
	if err != nil {
		return "", false, err
	}
	if !e.Runner.Note("run in %s, then read its pod's log:\n%s", m.Context, mustYAML(job)) {
		return "", false, nil
	}
	log, err = runJob(ctx, e, m, job)
	return log, err == nil, err
}

// CheckGitReachable runs GitReachJob in every member and fails, saying what to do, when a pod
// cannot fetch from the Git server: Flux would then never deliver anything, and the only
// symptom would be a Kustomization that is never Ready.
func CheckGitReachable(ctx context.Context, e *Env, gitURL string) error {
	return e.EachMember(func(m Member) error {
		job := GitReachJob(metav1.NamespaceDefault, gitURL, e.PolykubeImage())
		if !e.Runner.Note("run a Job in %s whose pod (image %s) runs: %s", m.Context, e.PolykubeImage(), strings.Join(job.Spec.Template.Spec.Containers[0].Command, " ")) {
			return nil
		}
		log, err := runJob(ctx, e, m, job)
		if err != nil {
			return fmt.Errorf("a pod cannot fetch from the Git server at %s (%w%s). Flux pulls from there, so nothing would be delivered. "+
				"The usual reason is a host firewall that drops traffic from the Docker network of the nodes (`docker network inspect kind` gives its subnet and bridge) to this machine: "+
				"allow TCP to the Git server's port from that subnet (e.g. iptables -I INPUT -s <subnet> -p tcp --dport <port> -j ACCEPT), then run up again",
				gitURL, err, lastLogLine(log))
		}
		return nil
	})
}

func lastLogLine(log string) string {
	lines := strings.Split(strings.TrimSpace(log), "\n")
	if l := lines[len(lines)-1]; l != "" {
		return "; the pod said: " + l
	}
	return ""
}

// runJob creates job in member m, waits until it finishes and returns its pod's log; a failed
// Job's error comes with the log, so the caller can say what the pod said.
func runJob(ctx context.Context, e *Env, m Member, job *batchv1.Job) (string, error) {
	cl, err := e.Client(m)
	if err != nil {
		return "", err
	}
	if err := cl.Create(ctx, job); err != nil {
		return "", fmt.Errorf("create the Job in %s: %w", m.Name, err)
	}
	defer func() {
		_ = cl.Delete(context.WithoutCancel(ctx), job, client.PropagationPolicy(metav1.DeletePropagationBackground))
	}()
	what := fmt.Sprintf("Job %s/%s in %s to finish", job.Namespace, job.Name, m.Name)
	failed := false
	err = wait.For(ctx, e.wait(topology.WaitProbe), what, func(ctx context.Context) error {
		if err := cl.Get(ctx, client.ObjectKeyFromObject(job), job); err != nil {
			return err
		}
		switch {
		case job.Status.Succeeded > 0:
			return nil
		case job.Status.Failed > 0:
			failed = true
			return wait.Stop(fmt.Errorf("the Job %s failed (kubectl --context %s -n %s logs job/%s)", job.Name, m.Context, job.Namespace, job.Name))
		}
		return fmt.Errorf("%d active, %d succeeded", job.Status.Active, job.Status.Succeeded)
	})
	if err != nil {
		if failed {
			log, _ := jobLog(ctx, m, job)
			return log, err
		}
		return "", err
	}
	return jobLog(ctx, m, job)
}

func jobLog(ctx context.Context, m Member, job *batchv1.Job) (string, error) {
	cs, err := clientset(m)
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
	return PodLog(ctx, m, job.Namespace, pods.Items[0].Name)
}

// PodLog reads the log of a pod of the member (its first container's).
func PodLog(ctx context.Context, m Member, namespace, name string) (string, error) {
	cs, err := clientset(m)
	if err != nil {
		return "", err
	}
	data, err := cs.CoreV1().Pods(namespace).GetLogs(name, &corev1.PodLogOptions{}).DoRaw(ctx)
	if err != nil {
		return "", fmt.Errorf("read the log of pod %s/%s in %s: %w", namespace, name, m.Name, err)
	}
	return string(data), nil
}

// clientset is a typed admin client of the member, for what controller-runtime's client
// does not do (pod logs).
func clientset(m Member) (*kubernetes.Clientset, error) {
	cfg, err := provider.RESTConfig(m.Kubeconfig, m.Context)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 30 * time.Second
	return kubernetes.NewForConfig(cfg)
}

// The echo workload of examples/echo.
const (
	EchoNamespace = "polykube-demo"
	EchoName      = "echo"
)
