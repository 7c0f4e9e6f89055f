package placement_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/polykube/polykube/internal/golden"
	"github.com/polykube/polykube/placement/contract"
)

// contractDir is the corpus of the upgrade contract (docs/upgrading.md).
var contractDir = filepath.Join("testdata", "contract")

// TestContract_Allocation pins, for every Workload of the corpus, what every operator computes
// and its peers compare: each cluster's allocation, autoscaling bounds, effective template hash
// and applied overrides, the failover plan for the corpus's deficit cases, and the spec hash.
// Two operator versions that may run side by side (docs/upgrading.md) must compute the same
// figures; a change here is a change of the contract, which needs a decision record and a
// version gate, and then `go test ./placement/ -run TestContract_Allocation -update`.
func TestContract_Allocation(t *testing.T) {
	c, err := contract.Load(contractDir)
	if err != nil {
		t.Fatalf("load the corpus: %v", err)
	}
	if len(c.Workloads) == 0 {
		t.Fatal("the corpus holds no Workload")
	}
	pinned := map[string]bool{}
	for i := range c.Workloads {
		w := &c.Workloads[i]
		key := w.Namespace + "/" + w.Name
		file := goldenName(w.Namespace, w.Name)
		pinned[filepath.Base(file)] = true
		t.Run(key, func(t *testing.T) {
			f, err := c.Compute(w)
			if err != nil {
				t.Fatalf("Workload %s: %v", key, err)
			}
			for _, d := range golden.AssertFields(t, file, f) {
				t.Errorf("Workload %s: %s changed: %s, pinned %s; operators of different versions would disagree (docs/upgrading.md)",
					key, describe(d.Path), d.Got, d.Want)
			}
		})
	}
	// A golden file whose Workload left the corpus pins nothing: say so rather than keep it.
	entries, err := os.ReadDir(filepath.Join(contractDir, "golden"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if !pinned[e.Name()] {
			t.Errorf("golden file %s has no Workload in the corpus; delete it if the Workload was removed on purpose", e.Name())
		}
	}
}

func goldenName(namespace, name string) string {
	return filepath.Join("contract", "golden", namespace+"_"+name+".yaml")
}

// describe names the cluster and the figure of a golden path: "clusters.aws-east.replicas" is
// "cluster aws-east: replicas"; "failover.east-down.clusters.aws-west.extra" is "failover case
// east-down: cluster aws-west: extra".
func describe(path string) string {
	parts := strings.Split(path, ".")
	var out []string
	for len(parts) > 0 {
		switch {
		case parts[0] == "clusters" && len(parts) > 1:
			out = append(out, "cluster "+parts[1])
			parts = parts[2:]
		case parts[0] == "failover" && len(parts) > 1:
			out = append(out, "failover case "+parts[1])
			parts = parts[2:]
		default:
			out = append(out, strings.Join(parts, "."))
			parts = nil
		}
	}
	return strings.Join(out, ": ")
}

// TestContract_CorpusCoversEveryCase keeps the corpus from being trimmed below what the
// contract covers: every strategy, selector and failover case.
func TestContract_CorpusCoversEveryCase(t *testing.T) {
	c, err := contract.Load(contractDir)
	if err != nil {
		t.Fatalf("load the corpus: %v", err)
	}
	has := map[string]bool{}
	for _, w := range c.Workloads {
		d := w.Spec.Distribution
		has["strategy "+d.Strategy] = true
		if d.Replicas != nil {
			has["a total (distribution.replicas)"] = true
		}
		for _, tg := range d.Targets {
			has["a target with weight"] = has["a target with weight"] || tg.Weight != nil
			has["a target with replicas"] = has["a target with replicas"] || tg.Replicas != nil
			has["a target with maxReplicas"] = has["a target with maxReplicas"] || tg.MaxReplicas != nil
		}
		for _, r := range d.TargetSelectors {
			has["a targetSelectors rule with replicas"] = has["a targetSelectors rule with replicas"] || r.Replicas != nil
			has["a targetSelectors rule with weight"] = has["a targetSelectors rule with weight"] || r.Weight != nil
			has["a targetSelectors rule with maxReplicas"] = has["a targetSelectors rule with maxReplicas"] || r.MaxReplicas != nil
		}
		for _, o := range w.Spec.Overrides {
			has["an override selecting by name"] = has["an override selecting by name"] || len(o.ClusterSelector.ClusterNames) > 0
			has["an override selecting by labels"] = has["an override selecting by labels"] || o.ClusterSelector.LabelSelector != nil
		}
		if w.Spec.Autoscaling != nil {
			has["autoscaling with "+d.Strategy] = true
		}
		if d.Failover != nil && len(c.Failover[w.Namespace+"/"+w.Name]) > 1 {
			has["failover with deficit cases"] = true
		}
		has["a Workload with ports"] = has["a Workload with ports"] || len(w.Spec.Ports) > 0
	}
	if len(c.Bindings) > 0 {
		has["a DatastoreBinding"] = true
	}
	for _, want := range []string{
		"strategy Static", "strategy MultiCloudWeighted", "a total (distribution.replicas)",
		"a target with weight", "a target with replicas", "a target with maxReplicas",
		"a targetSelectors rule with replicas", "a targetSelectors rule with weight", "a targetSelectors rule with maxReplicas",
		"an override selecting by name", "an override selecting by labels",
		"autoscaling with Static", "autoscaling with MultiCloudWeighted", "failover with deficit cases", "a Workload with ports", "a DatastoreBinding",
	} {
		if !has[want] {
			t.Errorf("the corpus (%s) has no Workload with %s; add one", filepath.Join(contractDir, contract.WorkloadsFile), want)
		}
	}
}
