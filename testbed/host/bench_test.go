package host

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/topology"
)

// Run with: go test -run='^$' -bench=. -benchtime=1x ./testbed/
// Each Up starts from nothing with a warm toolchain (binaries in the cache).

func benchTools(b *testing.B) *toolchain.Toolchain {
	b.Helper()
	tc, err := toolchain.New(toolchain.Options{Log: io.Discard})
	if err != nil {
		b.Fatal(err)
	}
	if _, err := tc.ResolveAll(context.Background(), "kwok", "flux"); err != nil {
		b.Fatalf("the benchmarks need the pinned binaries: %v\nRun `make tools`.", err)
	}
	return tc
}

// nClusters is a topology of n kwok clusters with every add-on the checkout supports.
func nClusters(n int, addons []string) *topology.Topology {
	top := &topology.Topology{APIVersion: topology.APIVersion, Kind: topology.Kind, Name: fmt.Sprintf("bench-%d", n), Addons: addons}
	for i := 1; i <= n; i++ {
		top.Clusters = append(top.Clusters, topology.Cluster{
			Name: fmt.Sprintf("cluster-%02d", i), Provider: "other", ClusterID: int32(i),
			PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 100+i)}, ServiceCIDR: fmt.Sprintf("10.%d.0.0/16", 200+i),
		})
	}
	top.SetDefaults()
	if err := top.Validate(); err != nil {
		panic(err)
	}
	return top
}

// benchAddons is every add-on, without the operator when the checkout has none yet.
func benchAddons() []string {
	if _, err := os.Stat("../operator/main.go"); err != nil {
		fmt.Println("note: operator/main.go is missing; benchmarking without the operator add-on")
		return []string{topology.AddonGit, topology.AddonFlux}
	}
	return topology.Addons
}

func benchUp(b *testing.B, n int) {
	tc := benchTools(b)
	top := nClusters(n, benchAddons())
	ctx := context.Background()
	for b.Loop() {
		tb, err := Open(Options{Topology: top, StateRoot: b.TempDir(), Log: io.Discard, Toolchain: tc})
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := tb.Up(ctx, UpOptions{}); err != nil {
			b.Fatal(err)
		}
		total := time.Since(start)
		rss := peakRSS(tb.PIDs())
		b.StopTimer()
		fmt.Printf("%d clusters ready in %s; peak RSS of all processes %d MiB (%d MiB per cluster)\n",
			n, total.Round(100*time.Millisecond), rss>>20, rss>>20/int64(n))
		for _, p := range tb.Phases {
			fmt.Printf("  %-28s %s\n", p.What, p.Took.Round(100*time.Millisecond))
			b.ReportMetric(p.Took.Seconds(), "s/"+strings.Join(strings.Fields(strings.ToLower(p.What)), "-"))
		}
		b.ReportMetric(float64(rss>>20), "MiB-peak-RSS")
		if err := tb.Down(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}

// BenchmarkUp_3Clusters: nothing to a three-cluster federation ready, by phase.
func BenchmarkUp_3Clusters(b *testing.B) { benchUp(b, 3) }

// BenchmarkUp_10Clusters: the same for ten clusters, when the machine has the memory.
func BenchmarkUp_10Clusters(b *testing.B) {
	if avail := memAvailable(); avail < 8<<30 {
		b.Skipf("10 clusters need about 8 GiB of free memory; %d MiB available", avail>>20)
	}
	benchUp(b, 10)
}

// BenchmarkCommitDelivered: a Git commit until Flux applied it in all three clusters.
func BenchmarkCommitDelivered(b *testing.B) {
	tc := benchTools(b)
	top := nClusters(3, []string{topology.AddonGit, topology.AddonFlux})
	ctx := context.Background()
	tb := upForBench(b, tc, top)
	dir := b.TempDir()
	i := 0
	for b.Loop() {
		i++
		cm := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bench, namespace: default}\ndata: {i: %q}\n", strconv.Itoa(i))
		if err := os.WriteFile(dir+"/cm.yaml", []byte(cm), 0o644); err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		rev, err := tb.CommitDir(ctx, dir, "bench", "")
		if err != nil {
			b.Fatal(err)
		}
		if err := tb.WaitDelivered(ctx, rev); err != nil {
			b.Fatal(err)
		}
		fmt.Printf("commit %d applied in all 3 clusters in %s\n", i, time.Since(start).Round(10*time.Millisecond))
	}
}

// upForBench brings a federation up for a benchmark that measures something on top of it, and
// tears it down when the benchmark ends.
func upForBench(b *testing.B, tc *toolchain.Toolchain, top *topology.Topology) *Testbed {
	b.Helper()
	tb, err := Open(Options{Topology: top, StateRoot: b.TempDir(), Log: io.Discard, Toolchain: tc})
	if err != nil {
		b.Fatal(err)
	}
	if err := tb.Up(context.Background(), UpOptions{}); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tb.Down(context.Background()) })
	return tb
}

// peakRSS sums the peak resident set size (VmHWM) of the processes.
func peakRSS(pids []int) int64 {
	var total int64
	for _, pid := range pids {
		total += statusKB(fmt.Sprintf("/proc/%d/status", pid), "VmHWM:") << 10
	}
	return total
}

func memAvailable() int64 { return statusKB("/proc/meminfo", "MemAvailable:") << 10 }

func statusKB(path, key string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fields := strings.Fields(sc.Text()); len(fields) >= 2 && fields[0] == key {
			v, _ := strconv.ParseInt(fields[1], 10, 64)
			return v
		}
	}
	return 0
}
