package incluster

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/provider/kind"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

func TestFaults_DryRunPlan(t *testing.T) {
	g := NewWithT(t)
	b, _, out := dryRun(t, Options{Provider: topology.ProviderKind})
	g.Expect(b.Up(context.Background())).To(Succeed())
	dep, sa := b.Operator()
	g.Expect(dep).To(Equal(gitrepo.OperatorObject{Kind: "Deployment", Namespace: "polykube-system", Name: "polykube-operator"}))
	g.Expect(sa.Kind).To(Equal("ServiceAccount"))
	g.Expect(sa.Name).NotTo(BeEmpty())
	out.Reset()

	ctx := context.Background()
	g.Expect(b.StopOperator(ctx, "onprem-fra")).To(Succeed())
	g.Expect(b.StartOperator(ctx, "onprem-fra")).To(Succeed())
	g.Expect(b.StopGit(ctx)).To(Succeed())
	g.Expect(b.StartGit(ctx)).To(Succeed())
	g.Expect(out.String()).To(Equal(
		"  # in kind-onprem-fra: annotate Deployment polykube-system/polykube-operator kustomize.toolkit.fluxcd.io/reconcile=disabled, scale it to 0, delete its pods with no grace period and wait until they are gone\n" +
			"  # in kind-onprem-fra: scale Deployment polykube-system/polykube-operator back to its replicas and remove kustomize.toolkit.fluxcd.io/reconcile\n" +
			"  # wait until Deployment polykube-system/polykube-operator is available in kind-onprem-fra\n" +
			"  # stop the Git server process and wait until http://172.18.0.1:<port>/polykube/gitops.git no longer answers\n" +
			"  # start the Git server process again and wait until it answers\n"))

	g.Expect(b.StopOperator(ctx, "nowhere")).To(MatchError(ContainSubstring(`no cluster "nowhere" in the federation`)))
	g.Expect(b.Exists()).To(BeFalse(), "a dry run records nothing")
}

func TestOpen_FindsTheCheckout(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	b, err := Open(Options{Topology: topology.Default(), Provider: topology.ProviderKind, Dir: "/run/polykube", DryRun: true, Log: &out})
	g.Expect(err).NotTo(HaveOccurred())
	root, err := filepath.Abs("../..")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(b.opts.SourceDir).To(Equal(root))
}

// StopOperator and StartOperator against a real API server: the Deployment is handed to
// and back from Flux, scaled to zero and back, and its pods are gone while it is stopped.
// envtest runs no controllers, so the test plays the Deployment controller's status part.
func TestOperatorStopStart_RealAPIServer(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	env, err := testenv.Start(ctx, testenv.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })

	top := topology.Default()
	top.Clusters = top.Clusters[:1]
	cluster := top.Clusters[0].Name
	dir := t.TempDir()
	writeKubeconfig(t, env.Config, filepath.Join(dir, "clusters", cluster, "kubeconfig"), kind.Context(cluster))
	var out bytes.Buffer
	b, err := Open(Options{Topology: top, Provider: topology.ProviderKind, Dir: dir, SourceDir: "testdata/src", Log: &out})
	g.Expect(err).NotTo(HaveOccurred())
	b.state.Operator = gitrepo.OperatorObject{Kind: "Deployment", Namespace: "polykube-system", Name: "polykube-operator"}

	cl, err := client.New(env.Config, client.Options{Scheme: datapath.Scheme})
	g.Expect(err).NotTo(HaveOccurred())
	labels := map[string]string{"app": "polykube-operator"}
	g.Expect(cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "polykube-system"}})).To(Succeed())
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "polykube-operator", Namespace: "polykube-system"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "manager", Image: "polykube:dev"}}},
			},
		},
	}
	g.Expect(cl.Create(ctx, dep)).To(Succeed())
	for _, name := range []string{"op-1", "op-2"} {
		g.Expect(cl.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "polykube-system", Labels: labels},
			Spec:       dep.Spec.Template.Spec,
		})).To(Succeed())
	}
	other := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "bystander", Namespace: "polykube-system", Labels: map[string]string{"app": "other"}}, Spec: dep.Spec.Template.Spec}
	g.Expect(cl.Create(ctx, other)).To(Succeed())

	g.Expect(b.StopOperator(ctx, cluster)).To(Succeed())
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(BeZero())
	g.Expect(dep.Annotations).To(HaveKeyWithValue("kustomize.toolkit.fluxcd.io/reconcile", "disabled"))
	g.Expect(dep.Annotations).To(HaveKeyWithValue(StoppedReplicasAnnotation, "2"))
	var pods corev1.PodList
	g.Expect(cl.List(ctx, &pods, client.InNamespace("polykube-system"))).To(Succeed())
	g.Expect(pods.Items).To(HaveLen(1), "only the operator's pods are killed")
	g.Expect(pods.Items[0].Name).To(Equal("bystander"))

	// Stopping twice keeps the replicas recorded the first time.
	g.Expect(b.StopOperator(ctx, cluster)).To(Succeed())
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
	g.Expect(dep.Annotations).To(HaveKeyWithValue(StoppedReplicasAnnotation, "2"))

	// The Deployment controller's part: report the replicas available once they are asked for.
	go func() {
		_ = wait.For(ctx, topology.Wait{Timeout: topology.Duration{Duration: time.Minute}}, "the scale-up", func(ctx context.Context) error {
			d := &appsv1.Deployment{}
			if err := cl.Get(ctx, client.ObjectKeyFromObject(dep), d); err != nil {
				return err
			}
			if ptr.Deref(d.Spec.Replicas, 0) != 2 {
				return os.ErrNotExist
			}
			d.Status = appsv1.DeploymentStatus{ObservedGeneration: d.Generation, Replicas: 2, UpdatedReplicas: 2, AvailableReplicas: 2, ReadyReplicas: 2}
			return cl.Status().Update(ctx, d)
		})
	}()
	g.Expect(b.StartOperator(ctx, cluster)).To(Succeed())
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(dep), dep)).To(Succeed())
	g.Expect(*dep.Spec.Replicas).To(Equal(int32(2)))
	g.Expect(dep.Annotations).NotTo(HaveKey("kustomize.toolkit.fluxcd.io/reconcile"))
	g.Expect(dep.Annotations).NotTo(HaveKey(StoppedReplicasAnnotation))

	// A Deployment that Flux deleted (with the Kustomization that applied it): stop is in
	// effect once the pods of its ReplicaSets are gone, and waits for that.
	g.Expect(cl.Delete(ctx, dep)).To(Succeed())
	orphan := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "polykube-operator-5d9f-x", Namespace: "polykube-system",
		OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "polykube-operator-5d9f", UID: "u1"}}},
		Spec: dep.Spec.Template.Spec}
	g.Expect(cl.Create(ctx, orphan)).To(Succeed())
	deleting := make(chan time.Time, 1)
	go func() {
		time.Sleep(time.Second)
		deleting <- time.Now()
		_ = cl.Delete(ctx, orphan, client.GracePeriodSeconds(0))
	}()
	g.Expect(b.StopOperator(ctx, cluster)).To(Succeed())
	g.Expect(time.Now()).To(BeTemporally(">=", <-deleting), "stop returned while the operator's pod was still there")
	g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(other), other)).To(Succeed(), "a pod of no ReplicaSet of the operator stays")
}

// writeKubeconfig writes a kubeconfig with one context for cfg, as kind would for a cluster.
func writeKubeconfig(t *testing.T, cfg *rest.Config, path, context string) {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	kc.Clusters[context] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData}
	kc.AuthInfos[context] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
	kc.Contexts[context] = &clientcmdapi.Context{Cluster: context, AuthInfo: context}
	kc.CurrentContext = context
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := clientcmd.WriteToFile(*kc, path); err != nil {
		t.Fatal(err)
	}
}
