package operator_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"sigs.k8s.io/yaml"
)

// clusterScoped lists the resources of the operator's RBAC that are not namespaced. Events are
// both: namespaced objects' Events go to their namespace, the cluster-scoped kinds' to default.
var clusterScoped = map[string]bool{
	"namespaces": true, "tokenreviews": true, "subjectaccessreviews": true,
	"clustermembers": true, "clustermembers/status": true, "federations": true, "federations/status": true,
	"events": true,
}

// permissions flattens rules into "group resource[/name] verb" strings, one per permission, so
// that rules grouped differently but granting the same compare equal.
func permissions(rules []rbacv1.PolicyRule, keep func(resource, name string) bool) []string {
	var out []string
	for _, r := range rules {
		names := r.ResourceNames
		if len(names) == 0 {
			names = []string{""}
		}
		for _, g := range r.APIGroups {
			for _, res := range r.Resources {
				for _, n := range names {
					if !keep(res, n) {
						continue
					}
					for _, v := range r.Verbs {
						out = append(out, g+" "+res+"/"+n+" "+v)
					}
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// generatedClusterRole reads the ClusterRole controller-gen writes from the operator's markers.
func generatedClusterRole(t *testing.T) rbacv1.ClusterRole {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "operator", "config", "rbac", "role.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range strings.Split(string(raw), "\n---\n") {
		var cr rbacv1.ClusterRole
		if err := yaml.Unmarshal([]byte(doc), &cr); err != nil {
			t.Fatal(err)
		}
		if cr.Kind == "ClusterRole" && cr.Name == "polykube-operator" {
			return cr
		}
	}
	t.Fatal("operator/config/rbac/role.yaml has no ClusterRole polykube-operator")
	return rbacv1.ClusterRole{}
}

// TestNamespaced_RoleHoldsTheNamespacedRules keeps the confined layout from drifting from the
// markers: the Role holds exactly the namespaced permissions of the generated ClusterRole (but
// the Cilium ConfigMap in kube-system), and the ClusterRole exactly the cluster-scoped ones.
func TestNamespaced_RoleHoldsTheNamespacedRules(t *testing.T) {
	g := NewWithT(t)
	generated := generatedClusterRole(t)
	m := render(t, filepath.Join("..", "operator-namespaced"))
	role := decode[rbacv1.Role](t, m, "Role", "polykube-operator-watched")
	cr := decode[rbacv1.ClusterRole](t, m, "ClusterRole", "polykube-operator")

	all := func(string, string) bool { return true }
	namespaced := func(res, name string) bool {
		return (!clusterScoped[res] || res == "events") && !(res == "configmaps" && name == "cilium-config")
	}
	cluster := func(res, _ string) bool { return clusterScoped[res] }
	g.Expect(permissions(role.Rules, all)).To(Equal(permissions(generated.Rules, namespaced)),
		"gitops/operator-namespaced/watched/role.yaml differs from the namespaced rules of operator/config/rbac/role.yaml: update it")
	g.Expect(permissions(cr.Rules, all)).To(Equal(permissions(generated.Rules, cluster)),
		"gitops/operator-namespaced/cluster_rules.yaml differs from the cluster-scoped rules of operator/config/rbac/role.yaml: update it")
	for _, p := range permissions(cr.Rules, all) {
		for _, kind := range []string{"secrets", "deployments", "services", "horizontalpodautoscalers", "workloads"} {
			g.Expect(p).NotTo(ContainSubstring(" "+kind+"/"), "the confined ClusterRole grants %s", p)
		}
	}
}

func TestNamespaced_BindsTheRoleInTheWatchedNamespaceOnly(t *testing.T) {
	g := NewWithT(t)
	m := render(t, filepath.Join("..", "operator-namespaced"))
	role := decode[rbacv1.Role](t, m, "Role", "polykube-operator-watched")
	rb := decode[rbacv1.RoleBinding](t, m, "RoleBinding", "polykube-operator-watched")
	g.Expect(role.Namespace).To(Equal("${WATCH_NAMESPACE}"))
	g.Expect(rb.Namespace).To(Equal("${WATCH_NAMESPACE}"))
	g.Expect(rb.Subjects).To(ConsistOf(rbacv1.Subject{Kind: "ServiceAccount", Name: "polykube-operator", Namespace: "polykube-system"}))
	g.Expect(rb.RoleRef.Name).To(Equal(role.Name))

	d := decode[appsv1.Deployment](t, m, "Deployment", "polykube-operator")
	g.Expect(d.Spec.Template.Spec.Containers[0].Args).To(ContainElement("--watch-namespaces=${WATCH_NAMESPACE}"))

	raw, err := m.AsYaml()
	g.Expect(err).NotTo(HaveOccurred())
	vars := regexp.MustCompile(`\$\{[^}]*\}`).FindAllString(string(raw), -1)
	g.Expect(slices.Compact(slices.Sorted(slices.Values(vars)))).To(Equal([]string{"${CLUSTER_NAME}", "${WATCH_NAMESPACE}"}))
}
