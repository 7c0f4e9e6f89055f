// Package fleettest runs a fleet of real API servers (one internal/testenv per cluster) for the
// integration tests and the benchmark of polykube-status: it writes a kubeconfig with one
// context per cluster, creates Workloads and Federations in every cluster, and writes their
// status through the status subresource the way each cluster's operator does.
package fleettest

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/placement"
)

// ReaderRoleFile is the shipped ClusterRole of polykube-status, relative to the repository root.
const ReaderRoleFile = "gitops/status-reader/clusterrole.yaml"

// Cluster is one running API server.
type Cluster struct {
	// Name is the cluster name its "operator" writes into status.
	Name string
	// Context is the admin context of this cluster in the fleet's kubeconfig.
	Context string
	Env     *testenv.Env
	// Admin can do anything; only the test uses it, never the code under test.
	Admin   client.Client
	stopped bool
}

// Fleet is a set of clusters and a kubeconfig that names them.
type Fleet struct {
	Clusters []*Cluster
	dir      string
	contexts map[string]*rest.Config
	order    []string
}

// Scheme knows the Polykube kinds, the client-go kinds and CustomResourceDefinitions.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := polykubev1alpha1.AddToScheme(s); err != nil {
		return nil, err
	}
	if err := apiextensionsv1.AddToScheme(s); err != nil {
		return nil, err
	}
	return s, nil
}

// startTimeoutEnv is envtest's variable for how long an API server may take to start.
const startTimeoutEnv = "KUBEBUILDER_CONTROLPLANE_START_TIMEOUT"

// Start starts one API server per name and fails the test (never skips) when
// they cannot start. Stop them with Fleet.Stop.
func Start(tb testing.TB, names ...string) *Fleet {
	tb.Helper()
	f := &Fleet{dir: tb.TempDir(), contexts: map[string]*rest.Config{}}
	s, err := Scheme()
	if err != nil {
		tb.Fatal(err)
	}
	// One at a time: several API servers booting at once on a small, busy machine miss envtest's
	// start timeout. A slow machine still gets there with the longer timeout set here.
	if os.Getenv(startTimeoutEnv) == "" {
		_ = os.Setenv(startTimeoutEnv, "2m")
	}
	var errs []error
	for _, n := range names {
		env, err := testenv.Start(context.Background(), testenv.Options{})
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: %w", n, err))
			break
		}
		c := &Cluster{Name: n, Context: "ctx-" + n, Env: env}
		f.Clusters = append(f.Clusters, c)
		f.AddContext(c.Context, env.Config)
		if c.Admin, err = client.New(env.Config, client.Options{Scheme: s}); err != nil {
			errs = append(errs, fmt.Errorf("cluster %s: admin client: %w", n, err))
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		f.Stop()
		tb.Fatalf("the polykube-status integration tests need real kube-apiservers and etcd: %v", err)
	}
	return f
}

// Stop stops every API server that still runs.
func (f *Fleet) Stop() {
	for _, c := range f.Clusters {
		if !c.stopped {
			c.stopped = true
			_ = c.Env.Stop()
		}
	}
}

// StopCluster stops one API server: its context becomes unreachable.
func (f *Fleet) StopCluster(tb testing.TB, c *Cluster) {
	tb.Helper()
	if err := c.Env.Stop(); err != nil {
		tb.Fatalf("stop %s: %v", c.Name, err)
	}
	c.stopped = true
}

// Cluster returns the cluster named name.
func (f *Fleet) Cluster(name string) *Cluster {
	for _, c := range f.Clusters {
		if c.Name == name {
			return c
		}
	}
	panic("no cluster " + name)
}

// AddContext adds a context (with its own user and cluster entry) to the kubeconfig.
func (f *Fleet) AddContext(name string, cfg *rest.Config) {
	if f.contexts == nil {
		f.contexts = map[string]*rest.Config{}
	}
	if _, ok := f.contexts[name]; !ok {
		f.order = append(f.order, name)
	}
	f.contexts[name] = cfg
}

// AddUser creates a certificate user in c and adds a context for it named context.
func (f *Fleet) AddUser(tb testing.TB, c *Cluster, context, user string, groups ...string) *rest.Config {
	tb.Helper()
	u, err := c.Env.AddUser(envtest.User{Name: user, Groups: groups}, nil)
	if err != nil {
		tb.Fatalf("add user %s to %s: %v", user, c.Name, err)
	}
	f.AddContext(context, u.Config())
	return u.Config()
}

// Kubeconfig writes the kubeconfig with every context and returns its path.
func (f *Fleet) Kubeconfig(tb testing.TB) string {
	tb.Helper()
	return f.KubeconfigAt(tb, filepath.Join(f.dir, "kubeconfig"))
}

// KubeconfigAt writes the kubeconfig with every context to p and returns p.
func (f *Fleet) KubeconfigAt(tb testing.TB, p string) string {
	tb.Helper()
	kc := clientcmdapi.NewConfig()
	for _, name := range f.order {
		cfg := f.contexts[name]
		kc.Clusters[name] = &clientcmdapi.Cluster{Server: cfg.Host, CertificateAuthorityData: cfg.CAData, InsecureSkipTLSVerify: cfg.Insecure}
		kc.AuthInfos[name] = &clientcmdapi.AuthInfo{ClientCertificateData: cfg.CertData, ClientKeyData: cfg.KeyData, Token: cfg.BearerToken}
		kc.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	if len(f.order) > 0 {
		kc.CurrentContext = f.order[0]
	}
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		tb.Fatalf("write kubeconfig: %v", err)
	}
	return p
}

// Namespace creates ns in every running cluster.
func (f *Fleet) Namespace(ctx context.Context, tb testing.TB, ns string) {
	tb.Helper()
	for _, c := range f.running() {
		err := c.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			tb.Fatalf("create namespace %s in %s: %v", ns, c.Name, err)
		}
	}
}

func (f *Fleet) running() []*Cluster {
	var out []*Cluster
	for _, c := range f.Clusters {
		if !c.stopped {
			out = append(out, c)
		}
	}
	return out
}

// Weighted returns a MultiCloudWeighted Workload splitting total equally over clusters.
func Weighted(ns, name string, total int32, clusters ...string) *polykubev1alpha1.Workload {
	w := &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: polykubev1alpha1.WorkloadSpec{
			Distribution: polykubev1alpha1.Distribution{Strategy: polykubev1alpha1.StrategyMultiCloudWeighted, Replicas: ptr.To(total)},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/" + name + ":1"}}},
			},
		},
	}
	for _, c := range clusters {
		w.Spec.Distribution.Targets = append(w.Spec.Distribution.Targets, polykubev1alpha1.DistributionTarget{ClusterRef: c, Weight: ptr.To[int32](1)})
	}
	return w
}

// CreateWorkload creates a copy of w in c and writes the status c's operator would write once
// its slice is fully ready; mutate (optional) changes that status before it is written.
func (c *Cluster) CreateWorkload(ctx context.Context, tb testing.TB, w *polykubev1alpha1.Workload, mutate func(*polykubev1alpha1.WorkloadStatus)) {
	tb.Helper()
	obj := w.DeepCopy()
	if err := c.Admin.Create(ctx, obj); err != nil {
		tb.Fatalf("create Workload %s/%s in %s: %v", w.Namespace, w.Name, c.Name, err)
	}
	var roster []polykubev1alpha1.ClusterMember
	if placement.UsesRoster(obj) {
		list := &polykubev1alpha1.ClusterMemberList{}
		if err := c.Admin.List(ctx, list); err != nil {
			tb.Fatalf("list ClusterMembers in %s: %v", c.Name, err)
		}
		roster = list.Items
	}
	st, err := StatusFor(obj, c.Name, roster)
	if err != nil {
		tb.Fatalf("allocate %s/%s: %v", w.Namespace, w.Name, err)
	}
	if mutate != nil {
		mutate(&st)
	}
	obj.Status = st
	if err := c.Admin.Status().Update(ctx, obj); err != nil {
		tb.Fatalf("write status of Workload %s/%s in %s: %v", w.Namespace, w.Name, c.Name, err)
	}
}

// StatusFor is the status the operator of cluster writes for w over roster once its slice is
// fully ready.
func StatusFor(w *polykubev1alpha1.Workload, cluster string, roster []polykubev1alpha1.ClusterMember) (polykubev1alpha1.WorkloadStatus, error) {
	alloc, err := placement.ForWorkloadIn(w, roster)
	if err != nil {
		return polykubev1alpha1.WorkloadStatus{}, err
	}
	mine, targeted := alloc.For(cluster)
	now := metav1.Now()
	st := polykubev1alpha1.WorkloadStatus{
		ObservedGeneration: w.Generation, Cluster: cluster, SpecHash: placement.SpecHash(w.Spec),
		DesiredReplicas: mine,
		Conditions: []metav1.Condition{
			{Type: polykubev1alpha1.AllocatedCondition, Status: metav1.ConditionTrue, Reason: polykubev1alpha1.ReasonSucceeded, ObservedGeneration: w.Generation, LastTransitionTime: now},
			{Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionTrue, Reason: polykubev1alpha1.ReasonSucceeded, ObservedGeneration: w.Generation, LastTransitionTime: now},
		},
	}
	if targeted {
		st.ReadyReplicas, st.Phase = mine, polykubev1alpha1.PhaseReady
	}
	// The layout of decision 0013: this cluster's own entry and a digest of every target's share.
	if targeted {
		st.Local = &polykubev1alpha1.TargetStatus{Cluster: cluster, DesiredReplicas: mine, Local: true,
			ReadyReplicas: ptr.To(mine), AvailableReplicas: ptr.To(mine), UpdatedReplicas: ptr.To(mine),
			Phase: polykubev1alpha1.PhaseReady, ObservedGeneration: w.Generation, LastUpdateTime: &now}
	}
	st.Allocation = &polykubev1alpha1.AllocationDigest{Digest: placement.AllocationDigest(alloc), Targets: int32(len(alloc)),
		TargetsWithReplicas: int32(alloc.TargetsWithReplicas())}
	return st, nil
}

// CreateDeployment creates a Deployment labelled as polykube's for the Workload named workload.
func (c *Cluster) CreateDeployment(ctx context.Context, tb testing.TB, ns, workloadName string, replicas int32) {
	tb.Helper()
	labels := map[string]string{
		polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.WorkloadNameLabel: workloadName,
		polykubev1alpha1.ClusterLabel: c.Name,
	}
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: workloadName, Labels: labels},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{polykubev1alpha1.WorkloadNameLabel: workloadName}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{polykubev1alpha1.WorkloadNameLabel: workloadName}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.example/app:1"}}},
			},
		},
	}
	if err := c.Admin.Create(ctx, d); err != nil {
		tb.Fatalf("create Deployment %s/%s in %s: %v", ns, workloadName, c.Name, err)
	}
}

// CreateFederation creates the Federation name with members in c, its status as c's operator
// writes it with every mesh check passing, and a ClusterMember per member.
func (c *Cluster) CreateFederation(ctx context.Context, tb testing.TB, name string, members ...string) {
	tb.Helper()
	for i, m := range members {
		// 10.240/16 to 10.255/16 for the first 16 members, then 10.16/16 onwards.
		cidr := fmt.Sprintf("10.%d.0.0/16", 240+i)
		if i >= 16 {
			cidr = fmt.Sprintf("10.%d.0.0/16", i)
		}
		cm := &polykubev1alpha1.ClusterMember{
			ObjectMeta: metav1.ObjectMeta{Name: m},
			Spec: polykubev1alpha1.ClusterMemberSpec{Provider: "kwok", Region: "local",
				Mesh: polykubev1alpha1.ClusterMeshSettings{ClusterID: int32(i + 1), PodCIDRs: []string{cidr}}},
		}
		if err := c.Admin.Create(ctx, cm); apierrors.IsAlreadyExists(err) {
			continue
		} else if err != nil {
			tb.Fatalf("create ClusterMember %s in %s: %v", m, c.Name, err)
		}
		cm.Status.Local = m == c.Name
		if err := c.Admin.Status().Update(ctx, cm); err != nil {
			tb.Fatalf("write status of ClusterMember %s in %s: %v", m, c.Name, err)
		}
	}
	fed := &polykubev1alpha1.Federation{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: polykubev1alpha1.FederationSpec{Members: members}}
	if err := c.Admin.Create(ctx, fed); err != nil {
		tb.Fatalf("create Federation %s in %s: %v", name, c.Name, err)
	}
	now := metav1.Now()
	fed.Status = polykubev1alpha1.FederationStatus{ObservedGeneration: fed.Generation, LocalCluster: c.Name}
	for i, m := range members {
		fed.Status.Members = append(fed.Status.Members, polykubev1alpha1.FederationMemberStatus{Name: m, Present: true, Local: m == c.Name, ClusterID: int32(i + 1)})
	}
	for _, t := range []string{polykubev1alpha1.ClusterIdentifiedCondition, polykubev1alpha1.MembersPresentCondition, polykubev1alpha1.ClusterIDsValidCondition,
		polykubev1alpha1.ClusterNamesValidCondition, polykubev1alpha1.PodCIDRsDisjointCondition, polykubev1alpha1.LocalMemberListedCondition, polykubev1alpha1.ReadyCondition} {
		fed.Status.Conditions = append(fed.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue,
			Reason: polykubev1alpha1.ReasonSucceeded, ObservedGeneration: fed.Generation, LastTransitionTime: now})
	}
	if err := c.Admin.Status().Update(ctx, fed); err != nil {
		tb.Fatalf("write status of Federation %s in %s: %v", name, c.Name, err)
	}
}

// ApplyReaderRole creates the shipped ClusterRole polykube-status-reader in c, read from
// gitops/status-reader, and binds it to user.
func (c *Cluster) ApplyReaderRole(ctx context.Context, tb testing.TB, user string) *rbacv1.ClusterRole {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join(testenv.RepoRoot(), ReaderRoleFile))
	if err != nil {
		tb.Fatalf("read the shipped ClusterRole: %v", err)
	}
	role := &rbacv1.ClusterRole{}
	if err := yaml.UnmarshalStrict(data, role); err != nil {
		tb.Fatalf("decode %s: %v", ReaderRoleFile, err)
	}
	if err := c.Admin.Create(ctx, role); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatalf("create ClusterRole %s in %s: %v", role.Name, c.Name, err)
	}
	c.BindClusterRole(ctx, tb, role.Name, user)
	return role
}

// BindClusterRole binds the ClusterRole role to user in c.
func (c *Cluster) BindClusterRole(ctx context.Context, tb testing.TB, role, user string) {
	tb.Helper()
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role + "-" + user},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := c.Admin.Create(ctx, binding); err != nil && !apierrors.IsAlreadyExists(err) {
		tb.Fatalf("bind %s to %s in %s: %v", role, user, c.Name, err)
	}
}
