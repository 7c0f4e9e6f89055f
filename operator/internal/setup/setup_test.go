package setup_test

import (
	"context"
	"crypto/tls"
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
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
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

	Expect(applyBase(t, c)).To(ConsistOf("Namespace/polykube-system", "ServiceAccount/polykube-operator",
		"ClusterRole/polykube-operator", "ClusterRoleBinding/polykube-operator", "Role/polykube-operator", "RoleBinding/polykube-operator",
		"ClusterRole/polykube-metrics-reader", "Service/polykube-operator-metrics",
		"PodDisruptionBudget/polykube-operator", "PriorityClass/polykube-operator"))

	cfg := operatorConfig(t)
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

	token := serviceAccountToken(t, c, "metrics-reader-rbac", "polykube-metrics-reader")
	Eventually(func() (string, error) {
		_, body, err := scrape(metricsAddr, token)
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

// applyBase creates what gitops/operator delivers, but the CRDs (testenv installs them) and the
// Deployment (the operator runs in-process here), and returns what it created; objects an
// earlier test created are left as they are.
func applyBase(t *testing.T, c client.Client) []string {
	t.Helper()
	rendered, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(),
		filepath.Join(testenv.RepoRoot(), "gitops", "operator"))
	if err != nil {
		t.Fatalf("kustomize build gitops/operator: %v", err)
	}
	var applied []string
	for _, r := range rendered.Resources() {
		if r.GetKind() == "CustomResourceDefinition" || r.GetKind() == "Deployment" {
			continue
		}
		m, err := r.Map()
		if err != nil {
			t.Fatal(err)
		}
		err = c.Create(context.Background(), &unstructured.Unstructured{Object: m})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("create %s/%s: %v", r.GetKind(), r.GetName(), err)
		}
		applied = append(applied, r.GetKind()+"/"+r.GetName())
	}
	return applied
}

// operatorConfig authenticates as the operator's ServiceAccount, so the base's RBAC applies.
func operatorConfig(t *testing.T) *rest.Config {
	return env.AddUser(t, envtest.User{
		Name:   "system:serviceaccount:polykube-system:polykube-operator",
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:polykube-system", "system:authenticated"},
	})
}

// serviceAccountToken creates the ServiceAccount name in polykube-system, binds it to
// clusterRole when one is given, and returns a token of it from the TokenRequest API (what a
// Prometheus pod gets mounted).
func serviceAccountToken(t *testing.T, c client.Client, name, clusterRole string) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "polykube-system", Name: name}}
	if err := c.Create(ctx, sa); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatalf("create ServiceAccount %s: %v", name, err)
	}
	if clusterRole != "" {
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: name}},
		}
		if err := c.Create(ctx, crb); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatalf("bind ServiceAccount %s to %s: %v", name, clusterRole, err)
		}
	}
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	if err := c.SubResource("token").Create(ctx, sa, tr); err != nil {
		t.Fatalf("request a token of ServiceAccount %s: %v", name, err)
	}
	return tr.Status.Token
}

// scrape GETs https://addr/metrics, with token as bearer token when it is not empty. The
// operator's certificate is self-signed: the test checks who may read, not the certificate.
func scrape(addr, token string) (int, string, error) {
	req, err := http.NewRequest(http.MethodGet, "https://"+addr+"/metrics", nil)
	if err != nil {
		return 0, "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	cl := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // self-signed, on loopback
	}}
	resp, err := cl.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body), err
}

// The metrics endpoint serves only a client whose token the API server authenticates and
// authorises for GET /metrics: no token is 401, a token without polykube-metrics-reader 403,
// a token bound to it 200 (issue 35: metrics as the ecosystem serves them).
func TestMetrics_OnlyTheReaderRoleMayScrape(t *testing.T) {
	RegisterTestingT(t)
	_, c := env.Start(t)
	applyBase(t, c)
	reader := serviceAccountToken(t, c, "prometheus", "polykube-metrics-reader")
	nosy := serviceAccountToken(t, c, "nosy", "")
	addr := freeAddr(t)
	op := optest.StartOperator(t, operatorConfig(t), "east", optest.Options{MetricsBindAddress: addr})

	// The endpoint answers once the manager has started it.
	Eventually(func() error { _, _, err := scrape(addr, ""); return err }).WithTimeout(30*time.Second).Should(Succeed(), "operator log:\n%s", tail(op))

	for _, tc := range []struct {
		who, token string
		want       int
	}{
		{"no token", "", http.StatusUnauthorized},
		// controller-runtime v0.24's filter answers a token the API server rejects (the
		// TokenReview's status.error) with 500 "Authentication failed": refused all the same.
		{"a made-up token", "not-a-token", http.StatusInternalServerError},
		{"ServiceAccount nosy (no binding)", nosy, http.StatusForbidden},
		{"ServiceAccount prometheus (polykube-metrics-reader)", reader, http.StatusOK},
	} {
		code, body, err := scrape(addr, tc.token)
		Expect(err).NotTo(HaveOccurred())
		t.Logf("GET https://%s/metrics as %s: %d %s (%d bytes)", addr, tc.who, code, http.StatusText(code), len(body))
		Expect(code).To(Equal(tc.want), "GET /metrics as %s; body: %.300s\noperator log:\n%s", tc.who, body, tail(op))
		if code == http.StatusOK {
			Expect(body).To(ContainSubstring("polykube_roster_members"))
			Expect(body).To(ContainSubstring("controller_runtime_reconcile_total"))
		} else {
			Expect(body).NotTo(ContainSubstring("polykube_"), "a refused client sees no metric")
		}
	}
	Expect(strings.ToLower(op.Log())).NotTo(ContainSubstring("forbidden"), "the operator's RBAC is missing a permission")
}

func tail(op *optest.Operator) string {
	l := op.Log()
	if len(l) > 8000 {
		l = l[len(l)-8000:]
	}
	return l
}

// Two replicas as gitops/operator runs them: one leads and reconciles, the other stands by; when
// the leader stops (a drain, a rolling update) it gives the Lease up and the standby takes over
// well within the lease duration (15 s), and reconciles.
func TestOperator_TwoReplicas_TheStandbyTakesOver(t *testing.T) {
	RegisterTestingT(t)
	_, c := env.Start(t)
	ctx := context.Background()
	applyBase(t, c)
	if err := c.Create(ctx, optest.ClusterMember("east", 1)); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	ns := optest.Namespace(t, c, "ha")
	cfg := operatorConfig(t)
	opts := optest.Options{LeaderElect: true, LeaderElectionNamespace: "polykube-system"}
	replicas := []*optest.Operator{optest.StartOperator(t, cfg, "east", opts), optest.StartOperator(t, cfg, "east", opts)}

	workload := func(name string) *polykubev1alpha1.Workload {
		return &polykubev1alpha1.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: polykubev1alpha1.WorkloadSpec{
				Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyStatic,
					Targets: []polykubev1alpha1.DistributionTarget{{ClusterRef: "east", Replicas: ptr.To[int32](1)}}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "api:1"}}}},
			},
		}
	}
	writesDeployments := func(op *optest.Operator) bool {
		return strings.Contains(strings.Join(op.Writes.WriteSummary(), "\n"), "/deployments")
	}
	deploymentOf := func(name string) func() error {
		return func() error { return c.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &appsv1.Deployment{}) }
	}

	Expect(c.Create(ctx, workload("first"))).To(Succeed())
	Eventually(deploymentOf("first")).WithTimeout(60 * time.Second).Should(Succeed())
	var leader, standby *optest.Operator
	switch {
	case writesDeployments(replicas[0]) && !writesDeployments(replicas[1]):
		leader, standby = replicas[0], replicas[1]
	case writesDeployments(replicas[1]) && !writesDeployments(replicas[0]):
		leader, standby = replicas[1], replicas[0]
	default:
		t.Fatalf("exactly one replica must reconcile; writes of the first: %v, of the second: %v",
			replicas[0].Writes.WriteSummary(), replicas[1].Writes.WriteSummary())
	}
	lease := &coordinationv1.Lease{}
	Expect(c.Get(ctx, types.NamespacedName{Namespace: "polykube-system", Name: setup.LeaderElectionID}, lease)).To(Succeed())
	held := ptr.Deref(lease.Spec.HolderIdentity, "")

	stopped := time.Now()
	leader.Stop(t)
	Eventually(func(g Gomega) string {
		g.Expect(c.Get(ctx, types.NamespacedName{Namespace: "polykube-system", Name: setup.LeaderElectionID}, lease)).To(Succeed())
		return ptr.Deref(lease.Spec.HolderIdentity, "")
	}).WithTimeout(12*time.Second).WithPolling(100*time.Millisecond).Should(And(Not(BeEmpty()), Not(Equal(held))),
		"the standby must take the Lease over before the stopped leader's lease (15 s) would have run out")
	t.Logf("the standby took the Lease over %s after the leader stopped", time.Since(stopped).Round(100*time.Millisecond))
	Expect(c.Create(ctx, workload("second"))).To(Succeed())
	Eventually(deploymentOf("second")).WithTimeout(60*time.Second).Should(Succeed(), "standby log:\n%s", tail(standby))
	Expect(writesDeployments(standby)).To(BeTrue())
}

// The operator's cache holds no managedFields: the operator never reads them, and for a
// Deployment they can be as large as its spec (issue 40, goal 5: bounded memory). It holds the
// Deployments Polykube manages (labelled managed-by=polykube), and no other.
func TestOperator_CacheHoldsNoManagedFields(t *testing.T) {
	RegisterTestingT(t)
	cfg, c := env.Start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "cache")
	other := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "other"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "other"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "other:1"}}},
			},
		},
	}
	Expect(c.Create(ctx, other)).To(Succeed())
	foreign := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "foreign", Labels: map[string]string{
			polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue}},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "foreign"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "foreign"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "foreign:1"}}},
			},
		},
	}
	Expect(c.Create(ctx, foreign)).To(Succeed())
	Expect(c.Get(ctx, client.ObjectKeyFromObject(foreign), foreign)).To(Succeed())
	Expect(foreign.ManagedFields).NotTo(BeEmpty(), "the API server records who set which field")

	mgr, err := setup.New(cfg, setup.Options{ClusterName: "east", MetricsBindAddress: "0", HealthProbeBindAddress: "0",
		SkipControllerNameValidation: true})
	Expect(err).NotTo(HaveOccurred())
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(runCtx) }()
	t.Cleanup(func() { cancel(); <-done })

	Eventually(func(g Gomega) {
		cached := &appsv1.Deployment{}
		g.Expect(mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(foreign), cached)).To(Succeed())
		g.Expect(cached.ManagedFields).To(BeEmpty(), "the cached copy keeps managedFields")
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	err = mgr.GetClient().Get(ctx, client.ObjectKeyFromObject(other), &appsv1.Deployment{})
	Expect(apierrors.IsNotFound(err)).To(BeTrue(), "a Deployment Polykube does not manage is in the cache: %v", err)
}

// The operator's cache holds only the Services Polykube made, yet a ServiceEndpoint still sees a
// Service of its name that Polykube did not make (the cache of foreign objects): it reports
// Conflict, leaves that Service alone, and creates its own as soon as that one is deleted.
func TestOperator_ServiceEndpoint_ForeignServiceIsAConflictUntilDeleted(t *testing.T) {
	RegisterTestingT(t)
	cfg, c := env.Start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "se-foreign")
	foreign := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api", Labels: map[string]string{"team": "payments"}},
		Spec:       corev1.ServiceSpec{Selector: map[string]string{"app": "legacy"}, Ports: []corev1.ServicePort{{Port: 9000}}},
	}
	Expect(c.Create(ctx, foreign)).To(Succeed())
	optest.StartOperator(t, cfg, "east", optest.Options{})
	se := &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
		Spec: polykubev1alpha1.ServiceEndpointSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "api"},
			Ports: []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80, TargetPort: 8080}}},
	}
	Expect(c.Create(ctx, se)).To(Succeed())
	ready := func(g Gomega) *metav1.Condition {
		got := &polykubev1alpha1.ServiceEndpoint{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(se), got)).To(Succeed())
		cond := meta.FindStatusCondition(got.Status.Conditions, polykubev1alpha1.ReadyCondition)
		g.Expect(cond).NotTo(BeNil())
		return cond
	}
	Eventually(func(g Gomega) {
		cond := ready(g)
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonConflict))
		g.Expect(cond.Message).To(ContainSubstring("it has no controller"))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
	now := &corev1.Service{}
	Expect(c.Get(ctx, client.ObjectKeyFromObject(foreign), now)).To(Succeed())
	Expect(now.ResourceVersion).To(Equal(foreign.ResourceVersion), "the foreign Service was changed")

	Expect(c.Delete(ctx, foreign)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(ready(g).Reason).NotTo(Equal(polykubev1alpha1.ReasonConflict))
		svc := &corev1.Service{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(se), svc)).To(Succeed())
		g.Expect(svc.Labels).To(HaveKeyWithValue(polykubev1alpha1.ManagedByLabel, polykubev1alpha1.ManagedByValue))
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())
}

// The cache holds only the EndpointSlices labelled as Polykube's; those of a ServiceEndpoint's
// Service are, because Kubernetes' EndpointSlice controller copies the Service's labels onto its
// slices. A ServiceEndpoint counts them; a slice of its Service without those labels is not seen.
func TestOperator_ServiceEndpoint_CountsTheSlicesThatCarryTheServiceLabels(t *testing.T) {
	RegisterTestingT(t)
	cfg, c := env.Start(t)
	ctx := context.Background()
	ns := optest.Namespace(t, c, "se-slices")
	optest.StartOperator(t, cfg, "east", optest.Options{})
	se := &polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: polykubev1alpha1.ServiceEndpointSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: "web"},
			Ports: []polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80, TargetPort: 8080}}},
	}
	Expect(c.Create(ctx, se)).To(Succeed())
	svc := &corev1.Service{}
	Eventually(func() error { return c.Get(ctx, client.ObjectKeyFromObject(se), svc) }).
		WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Succeed())

	slice := func(name string, labels map[string]string, ips ...string) *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: labels},
			AddressType: discoveryv1.AddressTypeIPv4}
		for _, ip := range ips {
			s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip},
				Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}})
		}
		return s
	}
	// As the EndpointSlice controller writes it: the Service's labels and its own two.
	copied := map[string]string{discoveryv1.LabelServiceName: "web", discoveryv1.LabelManagedBy: "endpointslice-controller.k8s.io"}
	for k, v := range svc.Labels {
		copied[k] = v
	}
	Expect(c.Create(ctx, slice("web-abcde", copied, "10.1.0.1", "10.1.0.2"))).To(Succeed())
	Expect(c.Create(ctx, slice("web-by-hand", map[string]string{discoveryv1.LabelServiceName: "web"}, "10.1.0.3"))).To(Succeed())
	Eventually(func(g Gomega) int32 {
		got := &polykubev1alpha1.ServiceEndpoint{}
		g.Expect(c.Get(ctx, client.ObjectKeyFromObject(se), got)).To(Succeed())
		return got.Status.LocalReadyEndpoints
	}).WithTimeout(30 * time.Second).WithPolling(100 * time.Millisecond).Should(Equal(int32(2)))
}
