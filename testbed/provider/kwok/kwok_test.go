package kwok_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/provider/e2e"
	"github.com/polykube/polykube/testbed/provider/existing"
	"github.com/polykube/polykube/testbed/provider/kwok"
	"github.com/polykube/polykube/testbed/topology"
)

func binaries(t *testing.T) kwok.Binaries {
	t.Helper()
	tc, err := toolchain.New(toolchain.Options{Log: io.Discard})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := tc.ResolveAll(context.Background(), "kwok")
	if err != nil {
		t.Fatalf("the kwok provider tests need the pinned kwok binaries: %v\nRun `make tools`.", err)
	}
	b := map[string]string{}
	for _, r := range rs {
		b[r.Name] = r.Path
	}
	return kwok.Binaries{Kwokctl: b[toolchain.Kwokctl], KwokController: b[toolchain.Kwok], KubeAPIServer: b[toolchain.KubeAPIServer],
		KubeControllerManager: b[toolchain.KubeControllerManager], KubeScheduler: b[toolchain.KubeScheduler], Etcd: b[toolchain.Etcd]}
}

// oneCluster is a topology of one on-premises kwok cluster with fakeNodes nodes.
func oneCluster(t *testing.T, topName, cluster string, id, fakeNodes int) *topology.Topology {
	t.Helper()
	top, err := topology.Parse(fmt.Appendf(nil, `apiVersion: testbed.polykube.kismet.io/v1alpha1
kind: Topology
name: %s
clusters:
  - {name: %s, provider: onprem, region: fra, zone: fra-dc1, clusterID: %d, podCIDRs: [10.244.0.0/16], serviceCIDR: 10.98.0.0/16, fakeNodes: %d}
addons: []
`, topName, cluster, id, fakeNodes))
	if err != nil {
		t.Fatal(err)
	}
	return top
}

func TestBinaries_Validate(t *testing.T) {
	g := gomega.NewWithT(t)
	err := kwok.Binaries{Kwokctl: "/nonexistent/kwokctl"}.Validate()
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("kwokctl (/nonexistent/kwokctl)")))
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("make tools")))
}

// TestProvider_Lifecycle creates one cluster through the e2e-framework adapter, checks its
// fake nodes and identity, stops and starts it, and deletes it.
func TestProvider_Lifecycle(t *testing.T) {
	bins := binaries(t)
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	top := oneCluster(t, "kwok-test", "onprem-fra", 3, 2)
	dir := t.TempDir()
	p, err := kwok.New(provider.Options{Dir: dir, Topology: top}, bins)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(provider.Has(p, provider.CapabilityDatapath)).To(gomega.BeFalse())

	cluster := e2e.New(p, top, "onprem-fra", p.LogDir)
	t.Cleanup(func() { _ = cluster.Destroy(context.Background()) })
	kubeconfig, err := cluster.Create(ctx)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(kubeconfig).To(gomega.Equal(filepath.Join(dir, "onprem-fra", "admin.kubeconfig")))
	g.Expect(cluster.GetKubectlContext()).To(gomega.Equal("kwok-onprem-fra"))
	g.Expect(cluster.WaitForControlPlane(ctx, nil)).To(gomega.Succeed())

	cs, err := kubernetes.NewForConfig(cluster.KubernetesRestConfig())
	g.Expect(err).NotTo(gomega.HaveOccurred())
	nodes, err := cs.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(nodes.Items).To(gomega.HaveLen(2))
	cidrs := []string{nodes.Items[0].Spec.PodCIDR, nodes.Items[1].Spec.PodCIDR}
	g.Expect(cidrs).To(gomega.ConsistOf("10.244.0.0/24", "10.244.1.0/24"))
	g.Expect(nodes.Items[0].Labels).To(gomega.HaveKeyWithValue("topology.kubernetes.io/region", "fra"))
	svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(svc.Spec.ClusterIP).To(gomega.HavePrefix("10.98."))

	// A pod on a fake node becomes Running: kwok simulates the kubelet.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "probe", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/probe"}}}}
	_, err = cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Eventually(func() corev1.PodPhase {
		p, err := cs.CoreV1().Pods("default").Get(ctx, "probe", metav1.GetOptions{})
		if err != nil {
			return ""
		}
		return p.Status.Phase
	}).WithTimeout(time.Minute).Should(gomega.Equal(corev1.PodRunning))

	// The existing provider takes the same cluster by its kubeconfig context and creates nothing.
	existingTop := *top
	existingTop.Provider = topology.ProviderExisting
	existingTop.Clusters = []topology.Cluster{top.Clusters[0]}
	existingTop.Clusters[0].Kubeconfig, existingTop.Clusters[0].Context = kubeconfig, "kwok-onprem-fra"
	ex := existing.New(provider.Options{Topology: &existingTop})
	got, err := ex.Create(ctx, existingTop.Clusters[0])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(got.Context).To(gomega.Equal("kwok-onprem-fra"))
	g.Expect(ex.Delete(ctx, "onprem-fra")).To(gomega.Succeed())
	g.Expect(ex.Stop(ctx, "onprem-fra")).To(gomega.MatchError(provider.ErrNotSupported))
	existingTop.Clusters[0].Context = "nope"
	_, err = ex.Create(ctx, existingTop.Clusters[0])
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(`context "nope" is not in`)))
	_, err = cs.Discovery().ServerVersion()
	g.Expect(err).NotTo(gomega.HaveOccurred(), "the existing provider left the cluster alone")

	// Create again is a no-op that returns the same cluster.
	again, err := p.Create(ctx, top.Clusters[0])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(again.Kubeconfig).To(gomega.Equal(kubeconfig))

	g.Expect(p.Stop(ctx, "onprem-fra")).To(gomega.Succeed())
	_, err = cs.Discovery().ServerVersion()
	g.Expect(err).To(gomega.HaveOccurred(), "a stopped cluster does not answer")
	g.Expect(p.Start(ctx, "onprem-fra")).To(gomega.Succeed())
	_, err = cs.CoreV1().Pods("default").Get(ctx, "probe", metav1.GetOptions{})
	g.Expect(err).NotTo(gomega.HaveOccurred(), "state survives stop and start")

	logs := t.TempDir()
	g.Expect(cluster.ExportLogs(ctx, logs)).To(gomega.Succeed())
	g.Expect(filepath.Join(logs, "kube-apiserver.log")).To(gomega.BeAnExistingFile())

	pids := componentPIDs(t, dir)
	g.Expect(pids).To(gomega.HaveLen(5), "etcd, kube-apiserver, kube-controller-manager, kube-scheduler, kwok-controller")
	g.Expect(cluster.Destroy(ctx)).To(gomega.Succeed())
	for _, pid := range pids {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err == nil { // gone, or a zombie waiting for init to reap it
			g.Expect(string(stat)).To(gomega.MatchRegexp(`\) [ZX] `), "component PID %d outlived Delete", pid)
		}
	}
	_, err = os.Stat(filepath.Join(dir, "onprem-fra"))
	g.Expect(errors.Is(err, os.ErrNotExist)).To(gomega.BeTrue())
	names, err := p.List(ctx)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(names).To(gomega.BeEmpty())
}

func componentPIDs(t *testing.T, dir string) []int {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, "*", "clusters", "*", "pids", "*.pid"))
	var pids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestProvider_PodIPsStayUniqueAcrossARestart: pods created after a stop and start get
// addresses no running pod holds. kwok-controller keeps its address pools in memory; a
// controller started again must learn the addresses of the pods that already run, or the
// first new pods get theirs (and the mesh mirror, like Cilium, sees one backend for two pods).
func TestProvider_PodIPsStayUniqueAcrossARestart(t *testing.T) {
	bins := binaries(t)
	g := gomega.NewWithT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	top := oneCluster(t, "kwok-ips", "ips", 4, 1)
	p, err := kwok.New(provider.Options{Dir: t.TempDir(), Topology: top}, bins)
	g.Expect(err).NotTo(gomega.HaveOccurred())
	t.Cleanup(func() { _ = p.Delete(context.Background(), "ips") })
	cl, err := p.Create(ctx, top.Clusters[0])
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cfg, err := cl.RESTConfig()
	g.Expect(err).NotTo(gomega.HaveOccurred())
	cs, err := kubernetes.NewForConfig(cfg)
	g.Expect(err).NotTo(gomega.HaveOccurred())

	createPods := func(prefix string, n int) {
		for i := range n {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i), Namespace: "default"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "example.invalid/probe"}}}}
			_, err := cs.CoreV1().Pods("default").Create(ctx, pod, metav1.CreateOptions{})
			g.Expect(err).NotTo(gomega.HaveOccurred())
		}
	}
	// runningIPs waits for want running pods with an address and returns pod name → address.
	runningIPs := func(want int) map[string]string {
		ips := map[string]string{}
		g.Eventually(func() int {
			list, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return -1
			}
			clear(ips)
			for _, p := range list.Items {
				if p.Status.Phase == corev1.PodRunning && p.Status.PodIP != "" {
					ips[p.Name] = p.Status.PodIP
				}
			}
			return len(ips)
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(gomega.Equal(want))
		return ips
	}

	unique := func(ips map[string]string) {
		holders := map[string][]string{}
		for name, ip := range ips {
			holders[ip] = append(holders[ip], name)
		}
		for ip, names := range holders {
			slices.Sort(names)
			g.Expect(names).To(gomega.HaveLen(1), "pods %v share the address %s", names, ip)
		}
	}

	// The first pods of a new cluster, all at once: kwok-controller makes a node's address
	// pool on first use, and two pods taking the first address of a node at the same time
	// each made one (PodController.ipPool loads, then stores).
	createPods("before", 8)
	unique(runningIPs(8))
	g.Expect(p.Stop(ctx, "ips")).To(gomega.Succeed())
	g.Expect(p.Start(ctx, "ips")).To(gomega.Succeed())
	createPods("after", 3)
	unique(runningIPs(11))
}
