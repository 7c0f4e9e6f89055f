package status_test

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status/fleettest"
	"github.com/polykube/polykube/internal/testenv"
	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/placement"
)

// The fleet of BenchmarkFleetStatus50: C clusters, W Workloads in every one of them.
const (
	fleetC          = 50
	fleetW          = 1000
	fleetNamespaces = 10
	// fleetSmallNS holds two Workloads: the namespace the 500-context case reads, so that it
	// measures the timeout's bound, not 500 copies of 1,000 Workloads.
	fleetSmallNS = "small"
	// defaultFleetRuns is how many times each measured command runs (POLYKUBE_BENCH_RUNS
	// overrides it); the median is reported.
	defaultFleetRuns = 3
	// kubectlParallel is the baseline's parallelism: kubectl over the contexts 8 at a time.
	kubectlParallel = 8
	// fullTimeout is polykube-status's --timeout over the 50 contexts: long enough that every
	// read completes on a loaded machine (kubectl has none), so that the two read the same.
	fullTimeout = 2 * time.Minute
	// hungTimeout is its --timeout over the 500 contexts, 5 of them hung: the default.
	hungTimeout = 5 * time.Second
)

// kubectlResources are the lists polykube-status reads, named for kubectl.
var kubectlResources = "workloads.polykube.kismet.io,federations.polykube.kismet.io,clustermembers.polykube.kismet.io," +
	"serviceendpoints.polykube.kismet.io,datastorebindings.polykube.kismet.io,deployments.apps"

// BenchmarkFleetStatus50 measures `polykube-status` over 50 contexts of a C = 50, W = 1,000
// fleet against the baseline of `kubectl get <the same lists> -A -o json` over the same
// contexts 8 at a time (issue 40, goal 3), and 500 contexts of which 5 hang.
//
// The 50 clusters are TLS servers of this process answering from a recording: one real
// kube-apiserver (envtest) holds the fleet's objects as member-00's operator writes them (50
// ClusterMembers, the Federation, 1,000 Workloads with their status through the status
// subresource, 1,000 Deployments); both polykube-status and kubectl read it once through a
// recording proxy; each replayed cluster answers the same requests with the recorded bodies in
// which the status its own operator would write (fleettest.StatusFor, the function that wrote
// member-00's) replaces member-00's, and its Deployments carry its own label and replicas.
// Everything else (list envelopes, metadata, managed fields, paging tokens, discovery) is the
// API server's. Both commands run as processes; their wall time and peak RSS (VmHWM) are
// printed beside the goals: wall ≤ 1.2× kubectl and ≤ 2 s, peak RSS ≤ 256 MiB. Figures, not
// assertions; it fails only when a command fails or a request was not in the recording.
func BenchmarkFleetStatus50(b *testing.B) {
	ctx := context.Background()
	dir := b.TempDir()
	setupStart := time.Now()

	kubectl := resolveKubectl(ctx, b)
	cli := buildStatusCLI(b, dir)
	// POLYKUBE_BENCH_STATUS_CLI_BEFORE names an earlier build measured beside this one, against
	// the same replays and kubectl baseline: the figures before and after a change.
	before := os.Getenv("POLYKUBE_BENCH_STATUS_CLI_BEFORE")

	names := make([]string, fleetC)
	for i := range names {
		names[i] = fmt.Sprintf("member-%02d", i)
	}
	f := fleettest.Start(b, names[0])
	b.Cleanup(f.Stop)
	c := f.Clusters[0]
	fl := writeFleet(ctx, b, c, names)
	b.Logf("fleet written to %s's API server: %d ClusterMembers, %d Workloads, %d Deployments (%s)",
		names[0], fleetC, len(fl.workloads), len(fl.workloads), time.Since(setupStart).Round(time.Second))

	// Record what both readers ask, through the proxy.
	rec, err := fleettest.NewRecorder(c.Env.Config)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(rec.Server.Close)
	recKC := writeKubeconfig(b, filepath.Join(dir, "record.kubeconfig"), []kcEntry{{"record", rec.Server.URL, rec.Server.Certificate().Raw}})
	for _, bin := range []string{cli, before} {
		for _, args := range [][]string{{"-A", "--timeout", fullTimeout.String()}, {"-n", fleetSmallNS, "--timeout", hungTimeout.String()}} {
			if bin == "" {
				continue
			}
			if _, err := runStatusCLI(ctx, bin, recKC, []string{"record"}, 5*time.Minute, filepath.Join(dir, "record.out"), args...); err != nil {
				b.Fatalf("record polykube-status %v: %v", args, err)
			}
		}
	}
	if _, err := runKubectl(ctx, kubectl, recKC, "record", filepath.Join(dir, "record-kubectl-cache")); err != nil {
		b.Fatalf("record kubectl: %v", err)
	}
	b.Logf("recorded %d answers", len(rec.Recording.Keys()))

	// One replayed cluster per member.
	variants := newFleetVariants(fl)
	replays := make([]*fleettest.Replay, fleetC)
	var entries []kcEntry
	for i, n := range names {
		r, err := fleettest.NewReplay(rec.Recording, variants.forCluster(n))
		if err != nil {
			b.Fatalf("replay %s: %v", n, err)
		}
		b.Cleanup(r.Server.Close)
		replays[i] = r
		entries = append(entries, kcEntry{"ctx-" + n, r.Server.URL, r.Server.Certificate().Raw})
	}
	kc := writeKubeconfig(b, filepath.Join(dir, "fleet.kubeconfig"), entries)
	contexts := make([]string, fleetC)
	for i, e := range entries {
		contexts[i] = e.name
	}
	b.Logf("setup (tools, fleet, recording, %d replays): %s", fleetC, time.Since(setupStart).Round(time.Second))
	missed := func() {
		b.Helper()
		for _, r := range replays {
			if m := r.Missed(); len(m) > 0 {
				b.Fatalf("a request was not in the recording (the benchmark must record every request it replays): %s", m[0])
			}
		}
	}

	fleetRuns := defaultFleetRuns
	if n, err := strconv.Atoi(os.Getenv("POLYKUBE_BENCH_RUNS")); err == nil && n > 0 {
		fleetRuns = n
	}
	b.Run("50-contexts", func(b *testing.B) {
		kcache := filepath.Join(dir, "kubectl-cache")
		// kubectl caches discovery per server: warm it, so the baseline is kubectl at its best.
		if err := parallelDo(len(contexts), kubectlParallel, func(i int) error {
			_, err := runCmd(ctx, os.DevNull, kubectl, "--kubeconfig", kc, "--context", contexts[i], "--cache-dir", kcache,
				"get", "clustermembers.polykube.kismet.io", "-o", "json")
			return err
		}); err != nil {
			b.Fatalf("kubectl warm-up: %v", err)
		}
		var kWall []time.Duration
		var kRSS, kRSS8 []int64
		for range fleetRuns {
			r, err := kubectlFleet(ctx, kubectl, kc, contexts, kcache)
			if err != nil {
				b.Fatal(err)
			}
			kWall, kRSS, kRSS8 = append(kWall, r.wall), append(kRSS, r.maxRSS), append(kRSS8, r.rss8)
		}
		var sWall, bWall []time.Duration
		var sRSS, bRSS []int64
		var code, beforeCode int
		out := filepath.Join(dir, "status-50.out")
		for range fleetRuns {
			r, err := runStatusCLI(ctx, cli, kc, contexts, 5*time.Minute, out, "-A", "--timeout", fullTimeout.String())
			if err != nil {
				b.Fatal(err)
			}
			sWall, sRSS, code = append(sWall, r.wall), append(sRSS, r.maxRSS), r.code
			if before == "" {
				continue
			}
			r, err = runStatusCLI(ctx, before, kc, contexts, 5*time.Minute, filepath.Join(dir, "status-50-before.out"), "-A", "--timeout", fullTimeout.String())
			if err != nil {
				b.Fatal(err)
			}
			bWall, bRSS, beforeCode = append(bWall, r.wall), append(bRSS, r.maxRSS), r.code
		}
		missed()
		if code != status0 {
			tail, _ := os.ReadFile(out)
			b.Logf("polykube-status exited %d over the replayed fleet (expected 0); its report ends:\n%s", code, lastLines(tail, 15))
		}
		kw, sw := median(kWall), median(sWall)
		kr, kr8, sr := medianInt(kRSS), medianInt(kRSS8), medianInt(sRSS)
		b.ReportMetric(sw.Seconds(), "status-wall-s")
		b.ReportMetric(kw.Seconds(), "kubectl-wall-s")
		b.ReportMetric(float64(sr)/(1<<20), "status-peak-rss-MiB")
		fmt.Printf("fleet status, %d contexts × %d Workloads (C = %d), exit %d, median of %d:\n", fleetC, fleetW, fleetC, code, fleetRuns)
		fmt.Printf("  polykube-status wall %s / kubectl get -o json 8 at a time %s = %.2f (goal <= 1.2)\n", sw.Round(time.Millisecond), kw.Round(time.Millisecond), sw.Seconds()/kw.Seconds())
		fmt.Printf("  polykube-status wall %s (goal <= 2s)\n", sw.Round(time.Millisecond))
		fmt.Printf("  polykube-status peak RSS %.0f MiB (goal <= 256 MiB); kubectl peak RSS %.0f MiB per process, %.0f MiB for the 8 largest at once\n",
			float64(sr)/(1<<20), float64(kr)/(1<<20), float64(kr8)/(1<<20))
		if before != "" {
			bw, br := median(bWall), medianInt(bRSS)
			fmt.Printf("  before (%s, exit %d): wall %s = %.2f × kubectl, peak RSS %.0f MiB; runs %v\n",
				before, beforeCode, bw.Round(time.Millisecond), bw.Seconds()/kw.Seconds(), float64(br)/(1<<20), roundAll(bWall))
		}
		fmt.Printf("  runs: polykube-status %v, kubectl %v; load %s\n", roundAll(sWall), roundAll(kWall), loadavg())
	})

	b.Run("500-contexts-5-hung", func(b *testing.B) {
		timeout := hungTimeout
		var healthy []kcEntry
		for i := range 495 {
			r := replays[i%fleetC]
			healthy = append(healthy, kcEntry{fmt.Sprintf("ctx-%03d", i), r.Server.URL, r.Server.Certificate().Raw})
		}
		all := slices.Clone(healthy)
		for i := range 5 {
			all = append(all, kcEntry{fmt.Sprintf("hung-%d", i), "https://" + hangingListener(b), nil})
		}
		kc500 := writeKubeconfig(b, filepath.Join(dir, "500.kubeconfig"), all)
		namesOf := func(es []kcEntry) []string {
			out := make([]string, len(es))
			for i, e := range es {
				out[i] = e.name
			}
			return out
		}
		healthyRun, err := runStatusCLI(ctx, cli, kc500, namesOf(healthy), 2*time.Minute, filepath.Join(dir, "status-495.out"), "-n", fleetSmallNS, "--timeout", timeout.String())
		if err != nil {
			b.Fatal(err)
		}
		withHung, err := runStatusCLI(ctx, cli, kc500, namesOf(all), 2*time.Minute, filepath.Join(dir, "status-500.out"), "-n", fleetSmallNS, "--timeout", timeout.String())
		if err != nil {
			b.Fatal(err)
		}
		if before != "" {
			r, err := runStatusCLI(ctx, before, kc500, namesOf(all), 2*time.Minute, filepath.Join(dir, "status-500-before.out"), "-n", fleetSmallNS, "--timeout", timeout.String())
			if err != nil {
				b.Fatal(err)
			}
			fmt.Printf("500 contexts, 5 hung, before (%s): wall %s, peak RSS %.0f MiB, exit %d\n", before, r.wall.Round(time.Millisecond), float64(r.maxRSS)/(1<<20), r.code)
		}
		missed()
		if withHung.code != status3 {
			b.Errorf("polykube-status over 500 contexts with 5 hung exited %d, want 3 (unreachable)", withHung.code)
		}
		bound := timeout + healthyRun.wall
		b.ReportMetric(withHung.wall.Seconds(), "wall-s")
		fmt.Printf("fleet status, 500 contexts of which 5 hang (namespace %s), --timeout %s:\n", fleetSmallNS, timeout)
		fmt.Printf("  wall %s; the 495 healthy alone %s; goal <= timeout + the healthy ones' own %s (ratio %.2f), peak RSS %.0f MiB, exit %d; load %s\n",
			withHung.wall.Round(time.Millisecond), healthyRun.wall.Round(time.Millisecond), bound.Round(time.Millisecond),
			withHung.wall.Seconds()/bound.Seconds(), float64(withHung.maxRSS)/(1<<20), withHung.code, loadavg())
	})
}

// Exit codes the benchmark expects (status.ExitOK, status.ExitUnreachable).
const (
	status0 = 0
	status3 = 3
)

// benchFleet is what writeFleet wrote: the roster and every Workload (with its allocation).
type benchFleet struct {
	roster    []polykubev1alpha1.ClusterMember
	workloads map[string]*polykubev1alpha1.Workload
	alloc     map[string]placement.Allocation
}

// writeFleet writes the fleet as member-00's operator would have written it: ClusterMembers
// and the Federation with their status, Workloads created and their status written, and the
// operator's Deployment of each.
func writeFleet(ctx context.Context, b *testing.B, c *fleettest.Cluster, names []string) *benchFleet {
	b.Helper()
	for i := range fleetNamespaces {
		createNamespace(ctx, b, c, fmt.Sprintf("ns-%02d", i))
	}
	createNamespace(ctx, b, c, fleetSmallNS)
	providers := []string{"aws", "gcp", "azure", "onprem"}
	for i, n := range names {
		cm := &polykubev1alpha1.ClusterMember{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: polykubev1alpha1.ClusterMemberSpec{Provider: providers[i%len(providers)], Region: fmt.Sprintf("region-%d", i%7),
				Labels: map[string]string{"tier": []string{"gold", "silver"}[i%2]},
				Mesh:   polykubev1alpha1.ClusterMeshSettings{ClusterID: int32(i + 1), PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", i+1)}}},
		}
		if err := c.Admin.Create(ctx, cm); err != nil {
			b.Fatalf("create ClusterMember %s: %v", n, err)
		}
		cm.Status.Local = n == c.Name
		if err := c.Admin.Status().Update(ctx, cm); err != nil {
			b.Fatalf("write status of ClusterMember %s: %v", n, err)
		}
	}
	// The members exist: CreateFederation only adds the Federation and its status.
	c.CreateFederation(ctx, b, "fleet", names...)
	var members polykubev1alpha1.ClusterMemberList
	if err := c.Admin.List(ctx, &members); err != nil {
		b.Fatal(err)
	}
	fl := &benchFleet{roster: members.Items, workloads: map[string]*polykubev1alpha1.Workload{}, alloc: map[string]placement.Allocation{}}

	var ws []*polykubev1alpha1.Workload
	for i := range fleetW {
		ws = append(ws, benchWorkload(fmt.Sprintf("ns-%02d", i%fleetNamespaces), fmt.Sprintf("svc-%04d", i), i, names))
	}
	for i := range 2 {
		ws = append(ws, benchWorkload(fleetSmallNS, fmt.Sprintf("small-%d", i), i, names))
	}
	var mu sync.Mutex
	err := parallelDo(len(ws), 8, func(i int) error {
		w := ws[i]
		if err := c.Admin.Create(ctx, w); err != nil {
			return fmt.Errorf("create Workload %s/%s: %w", w.Namespace, w.Name, err)
		}
		alloc, err := placement.ForWorkloadIn(w, fl.roster)
		if err != nil {
			return err
		}
		st, err := fleettest.StatusFor(w, c.Name, fl.roster)
		if err != nil {
			return err
		}
		w.Status = st
		if err := c.Admin.Status().Update(ctx, w); err != nil {
			return fmt.Errorf("write status of Workload %s/%s: %w", w.Namespace, w.Name, err)
		}
		mine, _ := alloc.For(c.Name)
		if err := c.Admin.Create(ctx, operatorDeployment(w, c.Name, mine)); err != nil {
			return fmt.Errorf("create Deployment %s/%s: %w", w.Namespace, w.Name, err)
		}
		mu.Lock()
		fl.workloads[w.Namespace+"/"+w.Name], fl.alloc[w.Namespace+"/"+w.Name] = w, alloc
		mu.Unlock()
		return nil
	})
	if err != nil {
		b.Fatal(err)
	}
	return fl
}

func createNamespace(ctx context.Context, b *testing.B, c *fleettest.Cluster, ns string) {
	b.Helper()
	if err := c.Admin.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		b.Fatalf("create namespace %s: %v", ns, err)
	}
}

// benchWorkload is a Workload spread over every member: every other one names all 50 targets,
// the rest select them by label; 100 to 149 replicas, so that every cluster runs 2 or 3.
func benchWorkload(ns, name string, i int, names []string) *polykubev1alpha1.Workload {
	var w *polykubev1alpha1.Workload
	if i%2 == 0 {
		w = fleettest.Weighted(ns, name, int32(100+i%50), names...)
	} else {
		w = fleettest.Weighted(ns, name, int32(100+i%50))
		w.Spec.Distribution.TargetSelectors = []polykubev1alpha1.TargetSelector{{
			LabelSelector: metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: polykubev1alpha1.ClusterLabel, Operator: metav1.LabelSelectorOpExists}}},
			Weight:        ptr.To[int32](1),
		}}
	}
	w.Spec.Template.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}
	w.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
	return w
}

// operatorDeployment is the Deployment the operator of cluster makes for w: its labels, the
// replicas of its share, the Workload's template with the selector label.
func operatorDeployment(w *polykubev1alpha1.Workload, cluster string, replicas int32) *appsv1.Deployment {
	sel := map[string]string{polykubev1alpha1.WorkloadNameLabel: w.Name}
	tmpl := *w.Spec.Template.DeepCopy()
	tmpl.Labels = map[string]string{polykubev1alpha1.WorkloadNameLabel: w.Name, "app": w.Name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: w.Namespace, Name: w.Name, Labels: map[string]string{
			polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.WorkloadNameLabel: w.Name,
			polykubev1alpha1.ClusterLabel: cluster,
		}},
		Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas), Selector: &metav1.LabelSelector{MatchLabels: sel}, Template: tmpl},
	}
}

// fleetVariants rewrites the recorded lists of member-00 into another member's: the status its
// operator writes, and its Deployments' cluster label and replicas. The recorded bodies are
// decoded once and shared; each variant sets its values and encodes them.
type fleetVariants struct {
	fl      *benchFleet
	decoded map[string]map[string]any
	mu      sync.Mutex
}

func newFleetVariants(fl *benchFleet) *fleetVariants {
	return &fleetVariants{fl: fl, decoded: map[string]map[string]any{}}
}

func (v *fleetVariants) forCluster(name string) fleettest.Variant {
	return func(key string, a fleettest.Answer) ([]byte, error) {
		// Only the lists this benchmark rewrites ("kind" comes last in the API server's JSON,
		// so the path says what a body is).
		path, _, _ := strings.Cut(strings.Fields(key)[1], "?")
		switch {
		case a.Status != 200 || !strings.HasPrefix(a.ContentType, "application/json"):
			return a.Body, nil
		case strings.HasSuffix(path, "/workloads"), strings.HasSuffix(path, "/federations"),
			strings.HasSuffix(path, "/clustermembers"), strings.HasSuffix(path, "/deployments"):
		default:
			return a.Body, nil
		}
		v.mu.Lock()
		defer v.mu.Unlock()
		list, ok := v.decoded[key]
		if !ok {
			dec := json.NewDecoder(bytes.NewReader(a.Body))
			dec.UseNumber()
			if err := dec.Decode(&list); err != nil {
				return nil, err
			}
			v.decoded[key] = list
		}
		items, _ := list["items"].([]any)
		for _, it := range items {
			obj, _ := it.(map[string]any)
			if err := v.rewrite(fmt.Sprint(list["kind"]), obj, name); err != nil {
				return nil, err
			}
		}
		return json.Marshal(list)
	}
}

func (v *fleetVariants) rewrite(kind string, obj map[string]any, cluster string) error {
	meta, _ := obj["metadata"].(map[string]any)
	objName, _ := meta["name"].(string)
	ns, _ := meta["namespace"].(string)
	status, _ := obj["status"].(map[string]any)
	switch kind {
	case "WorkloadList":
		w := v.fl.workloads[ns+"/"+objName]
		if w == nil {
			return fmt.Errorf("recorded Workload %s/%s was not written by the benchmark", ns, objName)
		}
		st, err := fleettest.StatusFor(w, cluster, v.fl.roster)
		if err != nil {
			return err
		}
		u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(&st)
		if err != nil {
			return err
		}
		obj["status"] = u
	case "FederationList":
		status["localCluster"] = cluster
		members, _ := status["members"].([]any)
		for _, m := range members {
			mm, _ := m.(map[string]any)
			mm["local"] = mm["name"] == cluster
		}
	case "ClusterMemberList":
		if status == nil {
			status = map[string]any{}
			obj["status"] = status
		}
		status["local"] = objName == cluster
	case "DeploymentList":
		labels, _ := meta["labels"].(map[string]any)
		labels[polykubev1alpha1.ClusterLabel] = cluster
		mine, _ := v.fl.alloc[ns+"/"+objName].For(cluster)
		spec, _ := obj["spec"].(map[string]any)
		spec["replicas"] = mine
	}
	return nil
}

// resolveKubectl returns the pinned kubectl from the toolchain: the cache, or a build from the
// Kubernetes module source on a first run (as the kind node image's).
func resolveKubectl(ctx context.Context, b *testing.B) string {
	b.Helper()
	tc, err := toolchain.New(toolchain.Options{Build: true, Offline: true, Log: os.Stderr})
	if err != nil {
		b.Fatal(err)
	}
	r, err := tc.Resolve(ctx, toolchain.Kubectl)
	if err != nil {
		b.Fatalf("the baseline needs kubectl: %v", err)
	}
	return r.Path
}

// buildStatusCLI compiles polykube-status from this tree, or takes the binary
// POLYKUBE_BENCH_STATUS_CLI names (an earlier build, to compare before and after a change).
func buildStatusCLI(b *testing.B, dir string) string {
	b.Helper()
	if p := os.Getenv("POLYKUBE_BENCH_STATUS_CLI"); p != "" {
		b.Logf("polykube-status: %s (POLYKUBE_BENCH_STATUS_CLI)", p)
		return p
	}
	out := filepath.Join(dir, "polykube-status")
	cmd := exec.Command("go", "build", "-o", out, "./cmd/polykube-status")
	cmd.Dir = testenv.RepoRoot()
	if msg, err := cmd.CombinedOutput(); err != nil {
		b.Fatalf("build polykube-status: %v\n%s", err, msg)
	}
	return out
}

type kcEntry struct {
	name, server string
	caDER        []byte
}

// writeKubeconfig writes a kubeconfig with a context per entry (a token user: the replays and
// the recorder need no credentials).
func writeKubeconfig(b *testing.B, path string, entries []kcEntry) string {
	b.Helper()
	f := &fleettest.Fleet{}
	for _, e := range entries {
		cfg := &rest.Config{Host: e.server, BearerToken: "bench"}
		if e.caDER != nil {
			cfg.CAData = pemCert(e.caDER)
		} else {
			cfg.Insecure = true
		}
		f.AddContext(e.name, cfg)
	}
	return f.KubeconfigAt(b, path)
}

type cmdRun struct {
	wall   time.Duration
	maxRSS int64
	code   int
}

func runCmd(ctx context.Context, stdout string, name string, args ...string) (cmdRun, error) {
	out, err := os.Create(stdout)
	if err != nil {
		return cmdRun{}, err
	}
	defer out.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = out, &stderr
	start := time.Now()
	if err := cmd.Start(); err != nil {
		return cmdRun{}, fmt.Errorf("%s: %w", name, err)
	}
	// The peak RSS is the child's VmHWM, sampled until it exits. getrusage's ru_maxrss would not
	// do: Linux counts in it the memory the child shared with this process before its exec, and
	// this process holds the 50 replays.
	done := make(chan struct{})
	var hwm atomic.Int64
	go func() {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb := vmHWM(cmd.Process.Pid); kb > hwm.Load() {
				hwm.Store(kb)
			}
			select {
			case <-done:
				return
			case <-tick.C:
			}
		}
	}()
	err = cmd.Wait()
	close(done)
	r := cmdRun{wall: time.Since(start), maxRSS: hwm.Load() << 10}
	if cmd.ProcessState != nil {
		r.code = cmd.ProcessState.ExitCode()
	}
	if _, isExit := err.(*exec.ExitError); err != nil && !isExit {
		return r, fmt.Errorf("%s: %w", name, err)
	}
	if r.code == 1 || r.code == 2 || r.code < 0 {
		return r, fmt.Errorf("%s %s exited %d: %s", filepath.Base(name), strings.Join(args[:min(len(args), 6)], " "), r.code, lastLines(stderr.Bytes(), 10))
	}
	return r, nil
}

// vmHWM is the peak resident set of process pid in KiB (0 once it is gone).
func vmHWM(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kb
		}
	}
	return 0
}

func runStatusCLI(ctx context.Context, cli, kubeconfig string, contexts []string, limit time.Duration, stdout string, extra ...string) (cmdRun, error) {
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	args := []string{"--kubeconfig", kubeconfig}
	for _, c := range contexts {
		args = append(args, "--context", c)
	}
	return runCmd(ctx, stdout, cli, append(args, extra...)...)
}

func runKubectl(ctx context.Context, kubectl, kubeconfig, kctx, cacheDir string) (cmdRun, error) {
	// Generous: one kubectl takes a second or two on a quiet machine, much longer on a loaded one.
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	r, err := runCmd(ctx, os.DevNull, kubectl, "--kubeconfig", kubeconfig, "--context", kctx, "--cache-dir", cacheDir,
		"get", kubectlResources, "-A", "-o", "json")
	if err == nil && r.code != 0 {
		err = fmt.Errorf("kubectl --context %s exited %d", kctx, r.code)
	}
	return r, err
}

type fleetRun struct {
	wall         time.Duration
	maxRSS, rss8 int64
}

// kubectlFleet runs kubectl over every context, kubectlParallel at a time.
func kubectlFleet(ctx context.Context, kubectl, kubeconfig string, contexts []string, cacheDir string) (fleetRun, error) {
	start := time.Now()
	rss := make([]int64, len(contexts))
	err := parallelDo(len(contexts), kubectlParallel, func(i int) error {
		r, err := runKubectl(ctx, kubectl, kubeconfig, contexts[i], cacheDir)
		rss[i] = r.maxRSS
		return err
	})
	out := fleetRun{wall: time.Since(start)}
	sort.Slice(rss, func(i, j int) bool { return rss[i] > rss[j] })
	out.maxRSS = rss[0]
	for _, r := range rss[:min(kubectlParallel, len(rss))] {
		out.rss8 += r
	}
	return out, err
}

// parallelDo runs do(0..n-1), at most parallel at a time, and returns the first error.
func parallelDo(n, parallel int, do func(int) error) error {
	slots := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := range n {
		slots <- struct{}{}
		wg.Go(func() {
			defer func() { <-slots }()
			if err := do(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return first
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}

func medianInt(xs []int64) int64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	return s[len(s)/2]
}

func roundAll(ds []time.Duration) []time.Duration {
	out := make([]time.Duration, len(ds))
	for i, d := range ds {
		out[i] = d.Round(10 * time.Millisecond)
	}
	return out
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func lastLines(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], "\n")
}

func pemCert(der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}
