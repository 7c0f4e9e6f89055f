package setup_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/operator/internal/setup"
)

var env optest.Env

func TestMain(m *testing.M) {
	code := m.Run()
	env.Stop()
	os.Exit(code)
}

func TestNew_RequiresClusterName(t *testing.T) {
	_, err := setup.New(&rest.Config{Host: "https://127.0.0.1:1"}, setup.Options{})
	NewWithT(t).Expect(err).To(MatchError(ContainSubstring("--cluster-name is required")))
}

// freeAddr returns a loopback address with a port that was free a moment ago.
func freeAddr(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("find a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

func httpGet(url string) (int, string, error) {
	resp, err := http.Get(url) //nolint:gosec // a loopback URL built by the test
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// TestOperator_RunsWithTheRBACOfTheGitopsBase applies the ServiceAccount and roles that
// gitops/operator delivers, runs the operator as that ServiceAccount (with leader election, the
// health probes and the metrics endpoint on), and checks that every reconciler does its job
// without a single forbidden request.
func TestOperator_RunsWithTheRBACOfTheGitopsBase(t *testing.T) {
	RegisterTestingT(t)
	_, c := env.Start(t)
	ctx := context.Background()

	rendered, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(),
		filepath.Join(testenv.RepoRoot(), "gitops", "operator"))
	Expect(err).NotTo(HaveOccurred())
	applied := 0
	for _, r := range rendered.Resources() {
		if r.GetKind() == "CustomResourceDefinition" || r.GetKind() == "Deployment" {
			continue // the CRDs are installed by testenv; the Deployment runs in-process here
		}
		m, err := r.Map()
		Expect(err).NotTo(HaveOccurred())
		Expect(c.Create(ctx, &unstructured.Unstructured{Object: m})).To(Succeed(), "create %s/%s", r.GetKind(), r.GetName())
		applied++
	}
	Expect(applied).To(Equal(6), "Namespace, ServiceAccount, ClusterRole(Binding), Role(Binding)")

	cfg := env.AddUser(t, envtest.User{
		Name:   "system:serviceaccount:polykube-system:polykube-operator",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:polykube-system", "system:authenticated"},
	})
	probes, metricsAddr := freeAddr(t), freeAddr(t)
	op := optest.StartOperator(t, cfg, "east", optest.Options{
		LeaderElect: true, LeaderElectionNamespace: "polykube-system",
		HealthProbeBindAddress: probes, MetricsBindAddress: metricsAddr,
	})

	// Readiness waits for the caches; liveness answers at once.
	Eventually(func() (int, error) { code, _, err := httpGet("http://" + probes + "/readyz"); return code, err }).
		WithTimeout(30 * time.Second).Should(Equal(http.StatusOK))
	code, _, err := httpGet("http://" + probes + "/healthz")
	Expect(err).NotTo(HaveOccurred())
	Expect(code).To(Equal(http.StatusOK))

	ns := optest.Namespace(t, c, "rbac")
	Expect(c.Create(ctx, optest.ClusterMember("east", 1))).To(Succeed())
	Expect(c.Create(ctx, &polykubev1alpha1.Federation{
		ObjectMeta: metav1.ObjectMeta{Name: "production"},
		Spec:       polykubev1alpha1.FederationSpec{Members: []string{"east"}},
	})).To(Succeed())
	Expect(c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		StringData: map[string]string{"url": "postgres://db"}})).To(Succeed())
	Expect(c.Create(ctx, &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: polykubev1alpha1.WorkloadSpec{
			Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyStatic,
				Targets: []polykubev1alpha1.DistributionTarget{{ClusterRef: "east", Replicas: ptr.To[int32](2)}}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "api:1"}}}},
			Ports:    []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80}},
		},
	})).To(Succeed())
	Expect(c.Create(ctx, &polykubev1alpha1.DatastoreBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
		Spec: polykubev1alpha1.DatastoreBindingSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"},
			SecretRef:   polykubev1alpha1.LocalSecretReference{Name: "db"},
			Env:         []polykubev1alpha1.EnvFromSecretKey{{Name: "DATABASE_URL", Key: "url"}},
		},
	})).To(Succeed())
	Expect(c.Create(ctx, &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-global"},
		Spec: polykubev1alpha1.ServiceEndpointSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"},
			Ports:       []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80}},
		},
	})).To(Succeed())

	conditionOf := func(g Gomega, obj client.Object, typ string) *metav1.Condition {
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(obj), obj)).To(Succeed())
		conds := obj.(interface{ GetConditions() []metav1.Condition }).GetConditions()
		cond := meta.FindStatusCondition(conds, typ)
		g.Expect(cond).NotTo(BeNil(), "%T %s has no %s condition", obj, obj.GetName(), typ)
		return cond
	}
	wl := &polykubev1alpha1.Workload{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"}}
	db := &polykubev1alpha1.DatastoreBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"}}
	fed := &polykubev1alpha1.Federation{ObjectMeta: metav1.ObjectMeta{Name: "production"}}
	se := &polykubev1alpha1.ServiceEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api-global"}}
	Eventually(func(g Gomega) {
		g.Expect(conditionOf(g, wl, polykubev1alpha1.ReadyCondition).Reason).To(Equal(polykubev1alpha1.ReasonDeploymentPending))
		g.Expect(conditionOf(g, db, polykubev1alpha1.BoundCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(conditionOf(g, fed, polykubev1alpha1.ClusterIdentifiedCondition).Status).To(Equal(metav1.ConditionTrue))
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: ns, Name: "api-global"}, &corev1.Service{})).To(Succeed())
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(se), se)).To(Succeed())
	}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "operator log:\n%s", tail(op))

	lease := &coordinationv1.Lease{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: "polykube-system", Name: setup.LeaderElectionID}, lease)).To(Succeed())
	Expect(*lease.Spec.HolderIdentity).NotTo(BeEmpty())

	Eventually(func() (string, error) {
		_, body, err := httpGet("http://" + metricsAddr + "/metrics")
		return body, err
	}).
		WithTimeout(30 * time.Second).Should(And(
		ContainSubstring(fmt.Sprintf(`polykube_workload_desired_replicas{namespace=%q,workload="api"} 2`, ns)),
		ContainSubstring(fmt.Sprintf(`polykube_workload_ready_replicas{namespace=%q,workload="api"} 0`, ns)),
	))

	Expect(strings.ToLower(op.Log())).NotTo(ContainSubstring("forbidden"), "the operator's RBAC is missing a permission")
	// The ServiceAccount may not list Secrets: the operator never tries.
	_, err = setup.New(cfg, setup.Options{ClusterName: "east"})
	Expect(err).NotTo(HaveOccurred())
	cl, err := client.New(cfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	Expect(apierrors.IsForbidden(cl.List(ctx, &corev1.SecretList{}, client.InNamespace(ns)))).To(BeTrue(), "Secrets must not be listable")
}

func tail(op *optest.Operator) string {
	l := op.Log()
	if len(l) > 8000 {
		l = l[len(l)-8000:]
	}
	return l
}
