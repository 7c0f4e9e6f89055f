package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/golden"
	"github.com/polykube/polykube/testbed/topology"
)

// testSource is a small Polykube checkout (Dockerfile, gitops/, examples/echo) that the
// in-cluster bed's dry runs plan from.
const testSource = "../../incluster/testdata/src"

// runCLI runs polykube-testbed with the arguments, a state directory (a fresh one when
// state is "") and the test source tree; the output has the state directory replaced by
// <state>.
func runCLI(t *testing.T, state string, args ...string) (string, error) {
	t.Helper()
	if state == "" {
		state = t.TempDir()
	}
	t.Setenv("PROVIDER", "")
	t.Setenv("IMAGES", "")
	root := newRootCmd()
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	root.SetArgs(append(args, "--state-dir", state, "--source-dir", testSource))
	err := root.ExecuteContext(context.Background())
	if err != nil {
		err = errors.New(strings.ReplaceAll(err.Error(), state, "<state>"))
	}
	return strings.ReplaceAll(out.String(), state, "<state>"), err
}

// One command line for every provider: the same commands plan a kind or k0s run with
// --dry-run, and print every action and command.
func TestCommands_DryRunPlans(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"fault-stop-apiserver-kind.golden", []string{"fault", "stop", "apiserver", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-start-apiserver-kind.golden", []string{"fault", "start", "apiserver", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-stop-operator-kind.golden", []string{"fault", "stop", "operator", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-start-operator-kind.golden", []string{"fault", "start", "operator", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-stop-flux-kind.golden", []string{"fault", "stop", "flux", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-start-flux-k0s.golden", []string{"fault", "start", "flux", "onprem-fra", "--provider", "k0s", "--dry-run"}},
		{"fault-stop-git-k0s.golden", []string{"fault", "stop", "git", "--provider", "k0s", "--dry-run"}},
		{"fault-stop-network-kind.golden", []string{"fault", "stop", "network", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-start-network-kind.golden", []string{"fault", "start", "network", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"git-commit-kind.golden", []string{"git", "commit", testSource + "/examples/echo", "--name", "echo", "-m", "workloads: echo", "--wait", "--provider", "kind", "--dry-run"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, err := runCLI(t, "", tc.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			golden.Assert(t, tc.golden, []byte(out))
		})
	}
}

func TestCommands_PlanEveryProvider(t *testing.T) {
	for _, tc := range []struct {
		args    []string
		printed string
	}{
		{[]string{"up", "--provider", "kind", "--dry-run"}, "helm upgrade --install cilium kube-system/cilium (chart install/kubernetes/cilium of github.com/cilium/cilium@v1.20.2) in kind-aws-eu-central-1"},
		{[]string{"up", "--provider", "k0s", "--dry-run"}, "/polykube-k0s/clusters/onprem-fra/k0s.yaml"},
		{[]string{"demo", "--provider", "kind", "--dry-run"}, "calls the global Service production/billing-api (60 calls a round"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, err := runCLI(t, "", tc.args...)
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(out).To(ContainSubstring(tc.printed))
		})
	}
}

func TestCommands_SayWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"fault", "stop", "dns", "a"}, `unknown fault "dns"`},
		{[]string{"fault", "stop", "network"}, "the network fault needs a CLUSTER"},
		{[]string{"fault", "stop", "network", "onprem-fra", "--provider", "k0s", "--dry-run"}, "fault network is not supported on provider k0s: it drops the traffic between a cluster's nodes and the other clusters' nodes, which only kind can do (the partition capability): bring the federation up with --provider kind"},
		{[]string{"fault", "stop", "git", "a"}, "takes no cluster"},
		{[]string{"fault", "stop", "apiserver"}, "needs a CLUSTER"},
		{[]string{"fault", "stop"}, "accepts between 2 and 3 arg(s), received 1: use fault stop|start FAULT [CLUSTER]"},
		{[]string{"fault", "pause", "operator", "a"}, `unknown action "pause": use stop or start`},
		{[]string{"fault", "pause", "git", "--provider", "kind"}, `unknown action "pause": use stop or start`},
		{[]string{"fault", "stop", "operator", "a"}, "no kwok run \"polykube\" is up in <state>: run `polykube-testbed up` first"},
		{[]string{"fault", "stop", "operator", "gcp-europe-west3", "--provider", "kind"}, "no kind run \"polykube\" is up in <state>: run `polykube-testbed up --provider kind` first"},
		// Every provider gets the same checks.
		{[]string{"fault", "stop", "git", "a", "--provider", "kind", "--dry-run"}, "takes no cluster"},
		{[]string{"fault", "start", "apiserver", "--provider", "k0s"}, "needs a CLUSTER"},
		{[]string{"fault", "stop", "dns", "a", "--provider", "kind", "--dry-run"}, `unknown fault "dns": use one of apiserver, operator, flux, git, network`},
		{[]string{"fault", "stop", "apiserver", "alpha", "--provider", "kind", "--dry-run"}, `no cluster "alpha" in the federation (clusters: aws-eu-central-1, gcp-europe-west3, onprem-fra)`},
		// What only real nodes do is refused on kwok, saying which providers take it.
		{[]string{"fault", "stop", "git", "--dry-run"}, "--dry-run: only the k0s and kind providers (real nodes) take it; add --provider k0s or --provider kind"},
		{[]string{"git", "commit", "x", "--dry-run"}, "--dry-run: only the k0s and kind providers"},
		{[]string{"up", "--dry-run"}, "--dry-run: only the k0s and kind providers"},
		{[]string{"up", "--images", "local"}, "--images: only the k0s and kind providers"},
		{[]string{"git", "commit", "testdata/missing", "--provider", "kind", "--dry-run"}, "testdata/missing"},
		{[]string{"up", "--provider", "minikube"}, `unknown provider "minikube"`},
		{[]string{"demo", "--provider", "minikube"}, "use one of existing, k0s, kind, kwok"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, err := runCLI(t, "", tc.args...)
			g.Expect(err).To(HaveOccurred(), out)
			g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
		})
	}
}

// As on kwok, the name defaults to DIR's base name and the message to "workloads: update
// <name>".
func TestGitCommit_Defaults(t *testing.T) {
	g := NewWithT(t)
	out, err := runCLI(t, "", "git", "commit", testSource+"/examples/echo", "--provider", "kind", "--dry-run")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("commit to http://<git-server>/polykube/gitops.git: workloads: update echo (workloads/echo/namespace.yaml, "))
	g.Expect(out).NotTo(ContainSubstring("wait until"), "no --wait")
}

// recordRun writes the state a run of the provider records, as up would (no clusters).
func recordRun(t *testing.T, root, dir, file, providerName string) {
	t.Helper()
	top := topology.Default()
	top.Provider = providerName
	data, err := json.Marshal(map[string]any{"topology": top})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(root, dir), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, dir, file), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// A command on a run finds it whatever its provider: the only run there is, or the one
// --provider and --run pick; with several and nothing to pick by, it asks.
func TestCommands_FindTheRunOfAnyProvider(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	recordRun(t, root, "polykube-kind", "datapath.json", topology.ProviderKind)

	// The only run is a kind run: a dry run of a fault plans against it, on kind.
	out, err := runCLI(t, root, "fault", "stop", "apiserver", "onprem-fra", "--dry-run")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("docker stop onprem-fra-control-plane"))

	recordRun(t, root, "demo", "state.json", topology.ProviderKwok)
	_, err = runCLI(t, root, "fault", "stop", "git", "--dry-run")
	g.Expect(err).To(MatchError(ContainSubstring("several runs are up; pick one with --run demo --provider kwok, or --run polykube --provider kind")))

	out, err = runCLI(t, root, "fault", "stop", "git", "--dry-run", "--provider", "kind")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("stop the Git server process"))
}
