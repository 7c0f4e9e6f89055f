package setup_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/operator/internal/setup"
)

func TestValidateWatchNamespaces(t *testing.T) {
	g := NewWithT(t)
	g.Expect(setup.ValidateWatchNamespaces(nil)).To(Succeed())
	g.Expect(setup.ValidateWatchNamespaces([]string{"team-a", "b"})).To(Succeed())
	g.Expect(setup.ValidateWatchNamespaces([]string{strings.Repeat("a", 64)})).To(MatchError(ContainSubstring("not a namespace name")))
	_, err := setup.New(&rest.Config{Host: "https://127.0.0.1:1"}, setup.Options{ClusterName: "east", WatchNamespaces: []string{"Team"}})
	g.Expect(err).To(MatchError(ContainSubstring(`--watch-namespaces: "Team" is not a namespace name`)))
}

// confinedRBAC renders gitops/operator-namespaced and returns its ClusterRole (the cluster-scoped
// rules) and its Role (the namespaced ones), as a member cluster would receive them.
func confinedRBAC(t *testing.T) (rbacv1.ClusterRole, rbacv1.Role) {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(),
		filepath.Join(testenv.RepoRoot(), "gitops", "operator-namespaced"))
	if err != nil {
		t.Fatalf("kustomize build gitops/operator-namespaced: %v", err)
	}
	var cr rbacv1.ClusterRole
	var role rbacv1.Role
	for _, r := range m.Resources() {
		var out any
		switch {
		case r.GetKind() == "ClusterRole" && r.GetName() == "polykube-operator":
			out = &cr
		case r.GetKind() == "Role" && r.GetName() == "polykube-operator-watched":
			out = &role
		default:
			continue
		}
		raw, err := r.AsYAML()
		if err != nil {
			t.Fatal(err)
		}
		if err := yaml.Unmarshal(raw, out); err != nil {
			t.Fatal(err)
		}
	}
	if cr.Rules == nil || role.Rules == nil {
		t.Fatal("gitops/operator-namespaced renders no ClusterRole polykube-operator or no Role polykube-operator-watched")
	}
	return cr, role
}

// TestOperator_WatchNamespaces_RunsOnRolesAlone runs the operator with --watch-namespaces as a
// ServiceAccount that has only what gitops/operator-namespaced grants: the cluster-scoped
// ClusterRole and the Role in one namespace. It must start and reconcile the Workload there
// without a forbidden request, and never see the Workload in another namespace.
func TestOperator_WatchNamespaces_RunsOnRolesAlone(t *testing.T) {
	RegisterTestingT(t)
	cfg, c := env.Start(t)
	ctx := context.Background()
	watched, other := optest.Namespace(t, c, "watched"), optest.Namespace(t, c, "other")

	// A ServiceAccount of its own, so that the base's ClusterRole (which another test binds to
	// polykube-operator in this API server) grants it nothing.
	const sa = "confined-operator"
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "polykube-system"}}); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	Expect(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "polykube-system", Name: sa}})).To(Succeed())
	subjects := []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "polykube-system", Name: sa}}
	cr, role := confinedRBAC(t)
	cr.ObjectMeta = metav1.ObjectMeta{Name: sa}
	role.ObjectMeta = metav1.ObjectMeta{Namespace: watched, Name: sa}
	Expect(c.Create(ctx, &cr)).To(Succeed())
	Expect(c.Create(ctx, &role)).To(Succeed())
	Expect(c.Create(ctx, &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: sa}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: sa}})).To(Succeed())
	Expect(c.Create(ctx, &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: watched, Name: sa}, Subjects: subjects,
		RoleRef: rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: sa}})).To(Succeed())
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(c.SubResource("token").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "polykube-system", Name: sa}}, tr)).To(Succeed())
	saCfg := rest.AnonymousClientConfig(cfg)
	saCfg.BearerToken = tr.Status.Token

	// The credentials really are confined: no Deployment outside the watched namespace.
	saClient, err := client.New(saCfg, client.Options{})
	Expect(err).NotTo(HaveOccurred())
	Expect(apierrors.IsForbidden(saClient.List(ctx, &appsv1.DeploymentList{}))).To(BeTrue(), "Deployments must not be listable cluster-wide")
	Expect(apierrors.IsForbidden(saClient.List(ctx, &appsv1.DeploymentList{}, client.InNamespace(other)))).To(BeTrue())

	Expect(c.Create(ctx, optest.ClusterMember("south", 9))).To(Succeed())
	workloadIn := func(ns string) *polykubev1alpha1.Workload {
		return &polykubev1alpha1.Workload{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "api"},
			Spec: polykubev1alpha1.WorkloadSpec{
				Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyStatic,
					Targets: []polykubev1alpha1.DistributionTarget{{ClusterRef: "south", Replicas: ptr.To[int32](1)}}},
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "api:1"}}}},
			},
		}
	}
	// The unwatched Workload first: by the time the watched one has its Deployment, an operator
	// that could see both would have handled this one too.
	Expect(c.Create(ctx, workloadIn(other))).To(Succeed())
	Expect(c.Create(ctx, workloadIn(watched))).To(Succeed())

	op := optest.StartOperator(t, saCfg, "south", optest.Options{WatchNamespaces: []string{watched}})

	Eventually(func(g Gomega) {
		var list appsv1.DeploymentList
		g.Expect(c.List(ctx, &list, client.InNamespace(watched))).To(Succeed())
		g.Expect(list.Items).To(HaveLen(1))
		wl := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: watched, Name: "api"}, wl)).To(Succeed())
		g.Expect(wl.Status.Conditions).NotTo(BeEmpty())
	}).WithTimeout(60*time.Second).WithPolling(200*time.Millisecond).Should(Succeed(), "operator log:\n%s", tail(op))

	Consistently(func(g Gomega) {
		var list appsv1.DeploymentList
		g.Expect(c.List(ctx, &list, client.InNamespace(other))).To(Succeed())
		g.Expect(list.Items).To(BeEmpty(), "the operator made a Deployment outside --watch-namespaces")
		wl := &polykubev1alpha1.Workload{}
		g.Expect(c.Get(ctx, client.ObjectKey{Namespace: other, Name: "api"}, wl)).To(Succeed())
		g.Expect(wl.Status.Conditions).To(BeEmpty(), "the operator wrote the status of a Workload outside --watch-namespaces")
	}).WithTimeout(2 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())

	Expect(strings.ToLower(op.Log())).NotTo(ContainSubstring("forbidden"), "the Roles of gitops/operator-namespaced miss a permission")
}
