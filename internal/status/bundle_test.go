package status_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/internal/toolchain"
)

// Values that must never appear in a bundle, each planted where a careless bundle would pick it
// up.
const (
	secretValue = "S3CRET-PASSWORD-91f2" // a Secret's data
	envValue    = "ENV-VALUE-7c1d"       // env[].value of a Workload, a Deployment, a pod
	configValue = "CM-VALUE-33aa"        // ConfigMap data (also a non-mesh key of cilium-config)
	substValue  = "SUBST-VALUE-5e5e"     // a Flux post-build substitution
)

func untar(t *testing.T, data []byte) map[string]string {
	t.Helper()
	gz, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		t.Fatalf("the bundle is not gzip: %v", err)
	}
	tr := tar.NewReader(gz)
	out := map[string]string{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("read the bundle: %v", err)
		}
		b, err := io.ReadAll(tr)
		if err != nil {
			t.Fatalf("read %s: %v", h.Name, err)
		}
		out[h.Name] = string(b)
	}
}

// applyRoleFile creates the Role or ClusterRole of a shipped file in c and binds it to user.
func applyRoleFile(ctx context.Context, t *testing.T, c *fleettest.Cluster, file, user string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), file))
	if err != nil {
		t.Fatal(err)
	}
	var probe metav1.TypeMeta
	if err := yaml.Unmarshal(data, &probe); err != nil {
		t.Fatal(err)
	}
	subject := []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}}
	switch probe.Kind {
	case "ClusterRole":
		c.ApplyReaderRole(ctx, t, user)
	case "Role":
		role := &rbacv1.Role{}
		if err := yaml.UnmarshalStrict(data, role); err != nil {
			t.Fatalf("decode %s: %v", file, err)
		}
		if err := c.Admin.Create(ctx, role); err != nil {
			t.Fatalf("create %s: %v", file, err)
		}
		rb := &rbacv1.RoleBinding{
			ObjectMeta: metav1.ObjectMeta{Namespace: role.Namespace, Name: role.Name + "-" + user},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role.Name},
			Subjects:   subject,
		}
		if err := c.Admin.Create(ctx, rb); err != nil {
			t.Fatalf("bind %s: %v", file, err)
		}
	default:
		t.Fatalf("%s holds a %s", file, probe.Kind)
	}
}

// TestBundle_NoSecretNoEnvValue builds a bundle from a real API server seeded with a Secret, env
// values in a Workload, a managed Deployment (and in its last-applied annotation), an operator
// pod, ConfigMaps and a Flux Kustomization with a substitution, as a user holding only the
// shipped status-reader roles; then it untars the bundle and searches every file for those
// values: none may be there. That the run reports no Failed section also shows that the shipped
// roles grant everything the bundle reads.
func TestBundle_NoSecretNoEnvValue(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := fleettest.Start(t, "alpha")
	t.Cleanup(f.Stop)
	alpha := f.Cluster("alpha")
	fluxCRDs, err := toolchain.FluxCRDs(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	_, err = envtest.InstallCRDs(alpha.Env.Config, envtest.CRDInstallOptions{
		Paths: []string{
			filepath.Join(fluxCRDs, "kustomize.toolkit.fluxcd.io_kustomizations.yaml"),
			filepath.Join(fluxCRDs, "source.toolkit.fluxcd.io_gitrepositories.yaml"),
		},
		MaxTime: 2 * time.Minute,
	})
	g.Expect(err).NotTo(HaveOccurred())
	for _, ns := range []string{"shop", "polykube-system", "flux-system"} {
		f.Namespace(ctx, t, ns)
	}
	create := func(obj client.Object) {
		t.Helper()
		g.Expect(alpha.Admin.Create(ctx, obj)).To(Succeed(), "create %T %s", obj, obj.GetName())
	}
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "db-creds"}, StringData: map[string]string{"password": secretValue}})
	create(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "polykube-system", Name: "operator-token", Labels: map[string]string{"app.kubernetes.io/name": "polykube-operator"}},
		StringData: map[string]string{"token": secretValue}})
	env := []corev1.EnvVar{
		{Name: "API_KEY", Value: envValue},
		{Name: "DB_PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "db-creds"}, Key: "password"}}},
	}
	w := fleettest.Weighted("shop", "web", 2, "alpha")
	w.Spec.Template.Spec.Containers[0].Env = env
	alpha.CreateWorkload(ctx, t, w, nil)
	dep := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "web",
			Labels:      map[string]string{polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.WorkloadNameLabel: "web"},
			Annotations: map[string]string{"kubectl.kubernetes.io/last-applied-configuration": `{"env":[{"name":"API_KEY","value":"` + envValue + `"}]}`}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](2),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec: corev1.PodSpec{
					InitContainers: []corev1.Container{{Name: "init", Image: "registry.example/init:1", Env: env}},
					Containers:     []corev1.Container{{Name: "app", Image: "registry.example/app:1", Env: env}},
				},
			},
		},
	}
	create(dep)
	create(&corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "polykube-system", Name: "polykube-operator-abc", Labels: map[string]string{"app.kubernetes.io/name": "polykube-operator"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "operator", Image: "ghcr.io/polykube/operator:dev", Env: env, Args: []string{"--cluster-name=alpha"}}}},
	})
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "cilium-config"},
		Data: map[string]string{"cluster-name": "alpha", "cluster-id": "1", "clustermesh-enable-endpoint-sync": "true", "unrelated-setting": configValue}})
	create(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "app-config"}, Data: map[string]string{"x": configValue}})
	create(&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "shop", Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload", Namespace: "shop", Name: "web"},
		Type:           corev1.EventTypeNormal, Reason: "Progressing", Message: "rolling out", Count: 1,
		LastTimestamp: metav1.Now(), Source: corev1.EventSource{Component: "polykube-operator"},
	})
	ks := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "kustomize.toolkit.fluxcd.io/v1", "kind": "Kustomization",
		"metadata": map[string]any{"namespace": "flux-system", "name": "polykube-operator"},
		"spec": map[string]any{"interval": "10m", "path": "./gitops/operator", "prune": true,
			"sourceRef": map[string]any{"kind": "GitRepository", "name": "fleet"},
			"postBuild": map[string]any{"substitute": map[string]any{"token": substValue}}},
	}}
	create(ks)
	create(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": "flux-system", "name": "fleet"},
		"spec":     map[string]any{"interval": "1m", "url": "https://git.example/fleet.git", "ref": map[string]any{"branch": "main"}},
	}})
	create(&unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository",
		"metadata": map[string]any{"namespace": "flux-system", "name": "not-polykube"},
		"spec":     map[string]any{"interval": "1m", "url": "https://git.example/other.git", "ref": map[string]any{"branch": "main"}},
	}})

	// The bundle runs as a user holding only the shipped roles.
	applyRoleFile(ctx, t, alpha, fleettest.ReaderRoleFile, "support")
	applyRoleFile(ctx, t, alpha, "gitops/status-reader/operator-logs/role.yaml", "support")
	f.AddUser(t, alpha, "support-alpha", "support")
	targets, err := status.ResolveTargets(status.ContextSelection{Kubeconfig: f.Kubeconfig(t), Contexts: []string{"support-alpha"}})
	g.Expect(err).NotTo(HaveOccurred())

	var out bytes.Buffer
	idx, err := status.WriteBundle(ctx, &out, targets, status.BundleOptions{Tail: 50, Timeout: 10 * time.Second})
	g.Expect(err).NotTo(HaveOccurred())
	files := untar(t, out.Bytes())

	// Nothing secret in any file.
	g.Expect(files).NotTo(BeEmpty())
	for name, body := range files {
		for _, v := range []string{secretValue, envValue, configValue, substValue} {
			g.Expect(body).NotTo(ContainSubstring(v), "%s carries %q", name, v)
		}
		g.Expect(body).NotTo(MatchRegexp(`(?m)^\s*kind: Secret\b`), "%s holds a Secret", name)
	}

	// What it must hold.
	var names []string
	for n := range files {
		names = append(names, n)
	}
	t.Logf("bundle files:\n%s\nREADME.txt:\n%s", strings.Join(names, "\n"), files["polykube-bundle/README.txt"])
	dir := "polykube-bundle/01-support-alpha/"
	g.Expect(files).To(HaveKey("polykube-bundle/README.txt"))
	g.Expect(files).To(HaveKey("polykube-bundle/index.yaml"))
	for _, f := range []string{"polykube/workloads.yaml", "polykube/federations.yaml", "polykube/clustermembers.yaml", "polykube/serviceendpoints.yaml",
		"polykube/datastorebindings.yaml", "managed/deployments.yaml", "managed/services.yaml", "managed/horizontalpodautoscalers.yaml",
		"events.yaml", "operator/pods.yaml", "delivery/flux-kustomizations.yaml", "delivery/flux-gitrepositories.yaml", "cilium.yaml"} {
		g.Expect(files).To(HaveKey(dir+f), "the bundle lacks %s", f)
	}
	g.Expect(files[dir+"managed/deployments.yaml"]).To(And(ContainSubstring("value: <redacted>"), ContainSubstring("name: db-creds")),
		"env values are redacted, valueFrom references kept")
	g.Expect(files[dir+"polykube/workloads.yaml"]).To(ContainSubstring("value: <redacted>"))
	g.Expect(files[dir+"cilium.yaml"]).To(And(ContainSubstring("cluster-name: alpha"), ContainSubstring("clustermesh-enable-endpoint-sync"), Not(ContainSubstring("unrelated-setting"))))
	g.Expect(files[dir+"delivery/flux-kustomizations.yaml"]).To(And(ContainSubstring("polykube-operator"), ContainSubstring("token: <redacted>")))
	g.Expect(files[dir+"delivery/flux-gitrepositories.yaml"]).To(And(ContainSubstring("fleet.git"), Not(ContainSubstring("other.git"))))
	g.Expect(files[dir+"events.yaml"]).To(ContainSubstring("rolling out"))
	g.Expect(files["polykube-bundle/README.txt"]).To(ContainSubstring("applications.argoproj.io: the CRD is not installed in this cluster: skipped"))

	// The shipped roles are enough: no section failed (the pod's log is missing only because
	// the test bed has no kubelet, which the API server says after authorising the request).
	for _, e := range idx.Clusters[0].Entries {
		g.Expect(e.Status).NotTo(Equal(status.SectionFailed), "%s: %s", e.What, e.Note)
	}
	g.Expect(idx.Clusters[0].Reason).To(Equal(status.ReasonOK))
	g.Expect(idx.ExitCode).To(Equal(status.ExitOK))
}

// TestReaderRoles_ReadOnlyNoSecrets: the shipped roles only read, never name Secrets, read
// ConfigMaps by the name cilium-config only, and read pods only through the namespaced Role.
func TestReaderRoles_ReadOnlyNoSecrets(t *testing.T) {
	g := NewWithT(t)
	for _, file := range []string{fleettest.ReaderRoleFile, "gitops/status-reader/operator-logs/role.yaml"} {
		data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), file))
		g.Expect(err).NotTo(HaveOccurred())
		var role struct {
			Kind  string              `json:"kind"`
			Rules []rbacv1.PolicyRule `json:"rules"`
		}
		g.Expect(yaml.Unmarshal(data, &role)).To(Succeed())
		g.Expect(role.Rules).NotTo(BeEmpty(), file)
		for _, r := range role.Rules {
			g.Expect(r.Verbs).To(HaveEach(BeElementOf("get", "list", "watch")), "%s grants more than reading: %v", file, r)
			g.Expect(r.Resources).NotTo(ContainElement(BeElementOf("secrets", "*")), "%s: %v", file, r)
			g.Expect(r.APIGroups).NotTo(ContainElement("*"), "%s: %v", file, r)
			if slices.Contains(r.Resources, "configmaps") {
				g.Expect(r.ResourceNames).To(Equal([]string{status.CiliumConfigName}), "%s reads ConfigMaps beyond cilium-config", file)
			}
			if slices.Contains(r.Resources, "pods") || slices.Contains(r.Resources, "pods/log") {
				g.Expect(role.Kind).To(Equal("Role"), "%s: pods are read in the operator's namespace only", file)
			}
		}
	}
}
