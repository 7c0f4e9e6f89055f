package host

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// These tests run real kwok clusters, Flux controllers and operators built by the toolchain.
// They fail (never skip) when the binaries are missing.

func twoClusters(t *testing.T, addons ...string) *topology.Topology {
	t.Helper()
	y := `apiVersion: testbed.polykube.kismet.io/v1alpha1
kind: Topology
name: ` + strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name())) + `
clusters:
  - {name: aws-eu-central-1, provider: aws, region: eu-central-1, clusterID: 1, podCIDRs: [10.242.0.0/16], serviceCIDR: 10.96.0.0/16}
  - {name: gcp-europe-west3, provider: gcp, region: europe-west3, clusterID: 2, podCIDRs: [10.243.0.0/16], serviceCIDR: 10.97.0.0/16}
addons: [` + strings.Join(addons, ", ") + `]
flux: {interval: 5s}
`
	top, err := topology.Parse([]byte(y))
	if err != nil {
		t.Fatal(err)
	}
	return top
}

// requireTools fails the test when a toolchain binary is missing.
func requireTools(t *testing.T, groups ...string) *toolchain.Toolchain {
	t.Helper()
	tc, err := toolchain.New(toolchain.Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.ResolveAll(context.Background(), groups...); err != nil {
		t.Fatalf("the test-bed integration tests need the pinned binaries (%s): %v\nRun `make tools` to build them.", strings.Join(groups, ", "), err)
	}
	return tc
}

// syncBuffer is a log safe for the concurrent status lines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
	// onWrite is called with each write.
	onWrite func(string)
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.onWrite != nil {
		s.onWrite(string(p))
	}
	return s.b.Write(p)
}

func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

func newTestbed(t *testing.T, top *topology.Topology, root string, log io.Writer, tc *toolchain.Toolchain) *Testbed {
	t.Helper()
	tb, err := Open(Options{Topology: top, StateRoot: root, Log: log, Toolchain: tc})
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

// expectGone checks that a run left no process and no directory.
func expectGone(g *gomega.WithT, dir string) {
	g.Expect(Leftovers(dir)).To(gomega.Succeed())
	_, err := os.Stat(dir)
	g.Expect(errors.Is(err, os.ErrNotExist)).To(gomega.BeTrue(), "the run directory %s should be gone", dir)
}

func configMapDir(t *testing.T, data string) string {
	dir := t.TempDir()
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n  namespace: default\ndata:\n  cluster: ${CLUSTER_NAME}\n  data: " + data + "\n"
	if err := os.WriteFile(filepath.Join(dir, "probe.yaml"), []byte(cm), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir
}

func probeData(ctx context.Context, tb *Testbed, cluster string) (string, error) {
	cl, err := tb.Client(cluster)
	if err != nil {
		return "", err
	}
	cm := &corev1.ConfigMap{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "probe"}, cm); err != nil {
		return "", err
	}
	if cm.Data["cluster"] != cluster {
		return "", fmt.Errorf("CLUSTER_NAME substituted as %q in %s", cm.Data["cluster"], cluster)
	}
	return cm.Data["data"], nil
}

func appliedRevision(ctx context.Context, tb *Testbed, cluster string) (string, error) {
	cl, err := tb.Client(cluster)
	if err != nil {
		return "", err
	}
	ks := &kustomizev1.Kustomization{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: testbed.FluxObjectName}, ks); err != nil {
		return "", err
	}
	return ks.Status.LastAppliedRevision, nil
}

// TestFederation_GitOps brings up two kwok clusters with the Git server and Flux, and checks
// delivery and the cluster, Git and Flux faults on that one federation.
func TestFederation_GitOps(t *testing.T) {
	tc := requireTools(t, "kwok", "flux")
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	root := t.TempDir()
	log := &syncBuffer{}
	tb := newTestbed(t, twoClusters(t, "git", "flux"), root, log, tc)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test-bed log:\n%s", log.String())
			_ = tb.CollectLogs(context.Background(), filepath.Join(os.TempDir(), "polykube-testbed-"+tb.Topology().Name))
			t.Logf("diagnostics in %s", filepath.Join(os.TempDir(), "polykube-testbed-"+tb.Topology().Name))
		}
		g := gomega.NewWithT(t)
		g.Expect(tb.Down(context.Background())).To(gomega.Succeed())
		expectGone(g, tb.Dir())
	})
	g.Expect(tb.Up(ctx, UpOptions{})).To(gomega.Succeed(), log.String())
	g.Expect(log.String()).To(gomega.ContainSubstring("✓ Installing Flux"))

	t.Run("up is idempotent", func(t *testing.T) {
		g := gomega.NewWithT(t)
		g.Expect(tb.Up(ctx, UpOptions{})).To(gomega.Succeed())
		g.Expect(tb.Status(ctx).Healthy()).To(gomega.BeTrue())
	})

	t.Run("clusters have their own identity, nodes and service CIDR", func(t *testing.T) {
		g := gomega.NewWithT(t)
		for _, c := range tb.Topology().Clusters {
			cl, err := tb.Client(c.Name)
			g.Expect(err).NotTo(gomega.HaveOccurred())
			nodes := &corev1.NodeList{}
			g.Expect(cl.List(ctx, nodes)).To(gomega.Succeed())
			g.Expect(nodes.Items).To(gomega.HaveLen(1))
			g.Expect(nodes.Items[0].Spec.PodCIDR).To(gomega.Equal(strings.Replace(c.PodCIDRs[0], "/16", "/24", 1)))
			svc := &corev1.Service{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: "default", Name: "kubernetes"}, svc)).To(gomega.Succeed())
			g.Expect(svc.Spec.ClusterIP).To(gomega.HavePrefix(strings.TrimSuffix(c.ServiceCIDR, "0.0/16")))
		}
	})

	t.Run("a commit is delivered by Flux to every cluster", func(t *testing.T) {
		g := gomega.NewWithT(t)
		rev, err := tb.CommitDir(ctx, configMapDir(t, "one"), "probe", "")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tb.WaitDelivered(ctx, rev)).To(gomega.Succeed())
		for _, c := range tb.Topology().ClusterNames() {
			g.Expect(probeData(ctx, tb, c)).To(gomega.Equal("one"))
		}
	})

	t.Run("a stopped API server is unreachable and comes back with its state", func(t *testing.T) {
		g := gomega.NewWithT(t)
		const c = "gcp-europe-west3"
		g.Expect(tb.Stop(ctx, testbed.FaultAPIServer, c)).To(gomega.Succeed())
		g.Expect(tb.apiReachable(ctx, c)).NotTo(gomega.Succeed())
		g.Expect(tb.apiReachable(ctx, "aws-eu-central-1")).To(gomega.Succeed())
		// Git keeps moving while the cluster is down; the other cluster follows.
		rev, err := tb.CommitDir(ctx, configMapDir(t, "two"), "probe", "")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tb.WaitDelivered(ctx, rev, "aws-eu-central-1")).To(gomega.Succeed())
		g.Expect(tb.Start(ctx, testbed.FaultAPIServer, c)).To(gomega.Succeed())
		g.Expect(tb.apiReachable(ctx, c)).To(gomega.Succeed())
		tb.Fetch(ctx)
		g.Expect(tb.WaitDelivered(ctx, rev, c)).To(gomega.Succeed())
		g.Expect(probeData(ctx, tb, c)).To(gomega.Equal("two"))
	})

	t.Run("a stopped Git server stops delivery, and delivery resumes when it is back", func(t *testing.T) {
		g := gomega.NewWithT(t)
		g.Expect(tb.Stop(ctx, testbed.FaultGit, "")).To(gomega.Succeed())
		_, err := gitrepo.Head(ctx, tb.GitURL())
		g.Expect(err).To(gomega.HaveOccurred())
		_, err = tb.CommitDir(ctx, configMapDir(t, "three"), "probe", "")
		g.Expect(err).To(gomega.HaveOccurred())
		r := tb.Status(ctx)
		g.Expect(r.Git.OK).To(gomega.BeFalse())
		g.Expect(tb.Start(ctx, testbed.FaultGit, "")).To(gomega.Succeed())
		rev, err := tb.CommitDir(ctx, configMapDir(t, "three"), "probe", "")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tb.WaitDelivered(ctx, rev)).To(gomega.Succeed())
	})

	t.Run("stopped Flux delivers nothing to its cluster until started", func(t *testing.T) {
		g := gomega.NewWithT(t)
		const c = "aws-eu-central-1"
		before, err := appliedRevision(ctx, tb, c)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(tb.Stop(ctx, testbed.FaultFlux, c)).To(gomega.Succeed())
		r := tb.Status(ctx)
		g.Expect(r.Clusters[0].Flux.OK).To(gomega.BeFalse())
		rev, err := tb.CommitDir(ctx, configMapDir(t, "four"), "probe", "")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		// The other cluster's Flux applies it; this one's, stopped, does not.
		g.Expect(tb.WaitDelivered(ctx, rev, "gcp-europe-west3")).To(gomega.Succeed())
		g.Expect(appliedRevision(ctx, tb, c)).To(gomega.Equal(before))
		g.Expect(probeData(ctx, tb, c)).To(gomega.Equal("three"))
		g.Expect(tb.Start(ctx, testbed.FaultFlux, c)).To(gomega.Succeed())
		g.Expect(tb.WaitDelivered(ctx, rev, c)).To(gomega.Succeed())
		g.Expect(probeData(ctx, tb, c)).To(gomega.Equal("four"))
	})

	t.Run("logs collects a bundle from every cluster", func(t *testing.T) {
		g := gomega.NewWithT(t)
		dest := t.TempDir()
		g.Expect(tb.CollectLogs(ctx, dest)).To(gomega.Succeed())
		for _, f := range []string{"processes/git-server.log", "processes/aws-eu-central-1-source-controller.log",
			"clusters/gcp-europe-west3/kustomizations.yaml", "clusters/gcp-europe-west3/events.yaml", "state.json"} {
			g.Expect(filepath.Join(dest, f)).To(gomega.BeAnExistingFile())
		}
		comps, _ := filepath.Glob(filepath.Join(dest, "clusters", "aws-eu-central-1", "components", "*"))
		g.Expect(comps).NotTo(gomega.BeEmpty(), "the kwok component logs")
	})
}

// TestFederation_Operators brings up two clusters with every add-on and checks that each
// operator runs with only its own cluster's ServiceAccount token.
func TestFederation_Operators(t *testing.T) {
	tc := requireTools(t, "kwok", "flux")
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	log := &syncBuffer{}
	tb := newTestbed(t, twoClusters(t, "git", "flux", "operator"), t.TempDir(), log, tc)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("test-bed log:\n%s", log.String())
		}
		g := gomega.NewWithT(t)
		g.Expect(tb.Down(context.Background())).To(gomega.Succeed())
		expectGone(g, tb.Dir())
	})
	g.Expect(tb.Up(ctx, UpOptions{})).To(gomega.Succeed(), log.String())
	g.Expect(tb.Status(ctx).Healthy()).To(gomega.BeTrue())

	operatorConfig := func(cluster string) *rest.Config {
		cfg, err := provider.RESTConfig(tb.OperatorKubeconfig(cluster), "")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		return cfg
	}

	t.Run("an operator's token works in its own cluster only", func(t *testing.T) {
		g := gomega.NewWithT(t)
		own := operatorConfig("aws-eu-central-1")
		cs, err := kubernetes.NewForConfig(own)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		_, err = cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
		// Authenticated: whatever RBAC says, it is not 401.
		g.Expect(apierrors.IsUnauthorized(err)).To(gomega.BeFalse(), "%v", err)

		other, err := tb.Cluster("gcp-europe-west3")
		g.Expect(err).NotTo(gomega.HaveOccurred())
		otherCfg, err := other.RESTConfig()
		g.Expect(err).NotTo(gomega.HaveOccurred())
		foreign := rest.CopyConfig(own)
		foreign.Host = otherCfg.Host
		foreign.CAData, foreign.CAFile = otherCfg.CAData, otherCfg.CAFile
		fcs, err := kubernetes.NewForConfig(foreign)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		_, err = fcs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{Limit: 1})
		g.Expect(apierrors.IsUnauthorized(err)).To(gomega.BeTrue(), "aws's operator token must be rejected by gcp's API server, got %v", err)
	})

	t.Run("an operator cannot list Secrets", func(t *testing.T) {
		g := gomega.NewWithT(t)
		cs, err := kubernetes.NewForConfig(operatorConfig("gcp-europe-west3"))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		_, err = cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{Limit: 1})
		g.Expect(apierrors.IsForbidden(err)).To(gomega.BeTrue(), "listing Secrets must be forbidden, got %v", err)
	})

	t.Run("a killed operator is down until restarted", func(t *testing.T) {
		g := gomega.NewWithT(t)
		const c = "aws-eu-central-1"
		g.Expect(tb.Stop(ctx, testbed.FaultOperator, c)).To(gomega.Succeed())
		g.Expect(tb.operatorHealth(ctx, c)).NotTo(gomega.Succeed())
		g.Expect(tb.operatorHealth(ctx, "gcp-europe-west3")).To(gomega.Succeed())
		g.Expect(tb.Start(ctx, testbed.FaultOperator, c)).To(gomega.Succeed())
		g.Expect(tb.operatorHealth(ctx, c)).To(gomega.Succeed())
	})

	t.Run("one cluster runs another operator binary, kept across restarts, then its own again", func(t *testing.T) {
		g := gomega.NewWithT(t)
		const c = "gcp-europe-west3"
		own, _ := tb.OperatorBinary(c)
		err := tb.UseOperator(ctx, c, filepath.Join(t.TempDir(), "missing"))
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("make previous-operator")))
		g.Expect(tb.operatorHealth(ctx, c)).To(gomega.Succeed(), "a binary that is not there must not stop the running operator")

		other := filepath.Join(t.TempDir(), "polykube-operator-other")
		data, err := os.ReadFile(own)
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(os.WriteFile(other, data, 0o755)).To(gomega.Succeed())
		g.Expect(tb.UseOperator(ctx, c, other)).To(gomega.Succeed())
		g.Expect(tb.operatorHealth(ctx, c)).To(gomega.Succeed())
		spec, err := tb.procs.Spec(operatorProc(c))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(spec.Path).To(gomega.Equal(other))
		g.Expect(tb.Stop(ctx, testbed.FaultOperator, c)).To(gomega.Succeed())
		g.Expect(tb.Start(ctx, testbed.FaultOperator, c)).To(gomega.Succeed())
		spec, err = tb.procs.Spec(operatorProc(c))
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(spec.Path).To(gomega.Equal(other), "a restart keeps the cluster's binary")
		_, isOwn := tb.OperatorBinary("aws-eu-central-1")
		g.Expect(isOwn).To(gomega.BeTrue(), "the other cluster keeps the run's own operator")

		g.Expect(tb.UseOperator(ctx, c, "")).To(gomega.Succeed())
		bin, isOwn := tb.OperatorBinary(c)
		g.Expect(isOwn).To(gomega.BeTrue())
		g.Expect(bin).To(gomega.Equal(own))
		g.Expect(tb.operatorHealth(ctx, c)).To(gomega.Succeed())
	})
}

// TestUp_CleansUpAfterFailure makes Up fail after the clusters exist (the Git add-on with a
// checkout that has no CRDs to put in the repository) and checks nothing is left, and that
// --retain keeps the run for DownAll to sweep.
func TestUp_CleansUpAfterFailure(t *testing.T) {
	tc := requireTools(t, "kwok")
	ctx := context.Background()
	root := os.Getenv("POLYKUBE_TESTBED_DEBUG_ROOT")
	if root == "" {
		root = t.TempDir()
	}
	top := twoClusters(t, "git")
	top.Clusters = top.Clusters[:1]
	emptyCheckout := t.TempDir()
	g := gomega.NewWithT(t)
	g.Expect(os.WriteFile(filepath.Join(emptyCheckout, "go.mod"), []byte("module github.com/polykube/polykube\n"), 0o644)).To(gomega.Succeed())
	// The Git server runs from this checkout's polykube-testbed; the empty one has none.
	src, err := gobuild.FindRoot(".")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	self, err := gobuild.Build(ctx, src, "./testbed/cmd/polykube-testbed", filepath.Join(tc.CacheDir(), "testbed-bin"))
	g.Expect(err).NotTo(gomega.HaveOccurred())

	t.Cleanup(func() { _, _ = DownAll(context.Background(), Options{StateRoot: root, Toolchain: tc, Log: io.Discard}) })

	t.Run("without retain", func(t *testing.T) {
		g := gomega.NewWithT(t)
		log := &syncBuffer{}
		tb, err := Open(Options{Topology: top, StateRoot: root, Log: log, Toolchain: tc, SourceDir: emptyCheckout})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		err = tb.Up(ctx, UpOptions{SelfBinary: self})
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("no Polykube CRDs")))
		g.Expect(log.String()).To(gomega.ContainSubstring("✓ Creating 1 kwok clusters"))
		expectGone(g, tb.Dir())
	})

	t.Run("with retain, then down --all", func(t *testing.T) {
		g := gomega.NewWithT(t)
		tb, err := Open(Options{Topology: top, StateRoot: root, Log: io.Discard, Toolchain: tc, SourceDir: emptyCheckout})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		err = tb.Up(ctx, UpOptions{Retain: true, SelfBinary: self})
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("no Polykube CRDs")))
		g.Expect(tb.apiReachable(ctx, top.Clusters[0].Name)).To(gomega.Succeed(), "the retained cluster still runs")
		runs, err := DownAll(ctx, Options{StateRoot: root, Toolchain: tc, Log: io.Discard})
		g.Expect(err).NotTo(gomega.HaveOccurred())
		g.Expect(runs).To(gomega.ContainElement(top.Name))
		expectGone(g, tb.Dir())
	})
}

// TestUp_CleansUpAfterInterrupt cancels Up while the clusters are being created (as Ctrl-C
// does) and checks nothing is left.
func TestUp_CleansUpAfterInterrupt(t *testing.T) {
	tc := requireTools(t, "kwok")
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	log := &syncBuffer{}
	tb := newTestbed(t, twoClusters(t), t.TempDir(), log, tc)
	// Interrupt once the first API server answers: clusters then exist, half made.
	go func() {
		w := topology.Wait{Timeout: topology.Duration{Duration: 5 * time.Minute}, Interval: topology.Duration{Duration: 50 * time.Millisecond}}
		err := wait.For(ctx, w, "the first API server to answer", func(context.Context) error {
			files, _ := filepath.Glob(filepath.Join(tb.Dir(), "clusters", "*", "admin.kubeconfig"))
			if len(files) == 0 {
				return errors.New("no kubeconfig yet")
			}
			cfg, err := provider.RESTConfig(files[0], "")
			if err != nil {
				return err
			}
			cs, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return err
			}
			_, err = cs.Discovery().ServerVersion()
			return err
		})
		if err == nil {
			cancel()
		}
	}()
	err := tb.Up(ctx, UpOptions{})
	g.Expect(err).To(gomega.MatchError(context.Canceled))
	expectGone(g, tb.Dir())
}
