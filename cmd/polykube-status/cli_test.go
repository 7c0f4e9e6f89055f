package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/polykube/polykube/internal/status"
)

func runAs(argv0 string, args ...string) result {
	var out, errOut bytes.Buffer
	code := run(context.Background(), append([]string{argv0}, args...), &out, &errOut, func(string) string { return "" })
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

func twoContexts(t *testing.T) string {
	t.Helper()
	kc := clientcmdapi.NewConfig()
	for _, n := range []string{"alpha", "beta"} {
		kc.Clusters[n] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
		kc.AuthInfos[n] = &clientcmdapi.AuthInfo{Token: "x"}
		kc.Contexts[n] = &clientcmdapi.Context{Cluster: n, AuthInfo: n}
	}
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := clientcmd.WriteToFile(*kc, p); err != nil {
		t.Fatal(err)
	}
	return p
}

func TestRun_UsageErrors(t *testing.T) {
	kc := twoContexts(t)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no contexts", []string{"--kubeconfig", kc}, "no contexts to query: name them with --context a --context b"},
		{"unknown context", []string{"--kubeconfig", kc, "--context", "gamma"}, `unknown context "gamma"`},
		{"bad output", []string{"--kubeconfig", kc, "--context", "alpha", "-o", "xml"}, "use -o table, -o json or -o yaml"},
		{"namespace and all", []string{"--kubeconfig", kc, "--context", "alpha", "-n", "x", "-A"}, "exclude each other"},
		{"bad timeout", []string{"--kubeconfig", kc, "--context", "alpha", "--timeout", "0s"}, "--timeout must be positive"},
		{"bad parallel", []string{"--kubeconfig", kc, "--context", "alpha", "--parallel", "0"}, "--parallel must be at least 1"},
		{"unknown flag", []string{"--kubeconfig", kc, "--contex", "alpha"}, "unknown flag: --contex"},
		{"bad pattern", []string{"--kubeconfig", kc, "--context", "alpha", "[x"}, "malformed"},
		{"view with args", []string{"--kubeconfig", kc, "--context", "alpha", "federation", "x"}, "unknown command"},
		{"plan without files", []string{"plan"}, "plan needs manifests"},
		{"plan with contexts", []string{"plan", "-f", "x", "--context", "alpha"}, "never contacts a cluster"},
		{"plan diff arity", []string{"plan", "--diff", "a"}, "exactly two paths"},
		{"plan positional", []string{"plan", "a"}, "with -f"},
		{"plan missing path", []string{"plan", "-f", "/nonexistent/manifests"}, "read /nonexistent/manifests"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			res := runAs("polykube-status", tt.args...)
			g.Expect(res.code).To(Equal(status.ExitUsage), "stderr: %s", res.stderr)
			g.Expect(res.stderr).To(ContainSubstring(tt.want))
			cmd := "polykube-status"
			for _, sub := range []string{"plan", "federation"} {
				if slices.Contains(tt.args, sub) {
					cmd += " " + sub
				}
			}
			g.Expect(res.stderr).To(ContainSubstring("Run '" + cmd + " --help' for usage."))
			g.Expect(res.stdout).To(BeEmpty())
		})
	}
}

func TestRun_HelpDocumentsExitCodes(t *testing.T) {
	g := NewWithT(t)
	res := runAs("polykube-status", "--help")
	g.Expect(res.code).To(Equal(status.ExitOK))
	g.Expect(res.stdout).To(And(ContainSubstring("Exit codes:"), ContainSubstring("4  the clusters disagree"), ContainSubstring("first of 3, 7, 4 and 5 wins"), ContainSubstring("7  an operator reports a failure")))
	plan := runAs("polykube-status", "plan", "--help")
	g.Expect(plan.stdout).To(ContainSubstring("6 an invalid Workload"))
}

func TestRun_KubectlPlugin(t *testing.T) {
	g := NewWithT(t)
	kc := twoContexts(t)
	res := runAs("/usr/local/bin/kubectl-polykube", "status", "--kubeconfig", kc, "--context", "nope")
	g.Expect(res.code).To(Equal(status.ExitUsage))
	g.Expect(res.stderr).To(ContainSubstring("Run 'kubectl polykube status --help' for usage."))

	help := runAs("kubectl-polykube", "status", "--help")
	g.Expect(help.stdout).To(ContainSubstring("kubectl polykube status [WORKLOAD...]"))

	plan := runAs("kubectl-polykube", "status", "plan", "-f", filepath.Join("..", "..", "internal", "status", "plan", "testdata", "plan", "old"))
	g.Expect(plan.code).To(Equal(status.ExitOK), plan.stderr)
	g.Expect(plan.stdout).To(MatchRegexp(`billing-api\s+shop\s+MultiCloudWeighted\s+2\s+2\s+2\s+6`))

	// Without the plugin name, "status" is just a workload filter.
	direct := runAs("polykube-status", "status", "--kubeconfig", kc)
	g.Expect(direct.stderr).To(ContainSubstring("no contexts to query"))
}

func TestRun_Plan(t *testing.T) {
	g := NewWithT(t)
	testdata := filepath.Join("..", "..", "internal", "status", "plan", "testdata", "plan")
	res := runAs("polykube-status", "plan", "-f", filepath.Join(testdata, "invalid"), "-o", "json")
	g.Expect(res.code).To(Equal(status.ExitInvalidManifest))
	g.Expect(res.stdout).To(ContainSubstring(`"reason": "invalid distribution: target \"alpha\" needs replicas with strategy Static"`))

	// plan -k says on stderr what it read outside the kustomization; stdout stays the plan.
	k := runAs("polykube-status", "plan", "-k", "-f", filepath.Join(testdata, "kustomize"))
	g.Expect(k.code).To(Equal(status.ExitOK), k.stderr)
	g.Expect(k.stderr).To(MatchRegexp(`^plan -k: kustomize build \S+/kustomize read /\S+/old/workloads.yaml, outside that directory\n$`))
	g.Expect(k.stdout).To(MatchRegexp(`billing-api\s+shop`))

	diff := runAs("polykube-status", "plan", "--diff", filepath.Join(testdata, "old"), filepath.Join(testdata, "new"))
	g.Expect(diff.code).To(Equal(status.ExitOK), diff.stderr)
	g.Expect(diff.stdout).To(MatchRegexp(`web\s+shop\s+gamma\s+-\s+2\s+\+2 \(new target\)`))
}

func TestUseColor(t *testing.T) {
	g := NewWithT(t)
	env := func(v string) func(string) string { return func(string) string { return v } }
	g.Expect(useColor(&bytes.Buffer{}, env(""))).To(BeFalse(), "a buffer is not a terminal")
	g.Expect(useColor(os.Stdout, env("1"))).To(BeFalse(), "NO_COLOR wins")
	f, err := os.CreateTemp(t.TempDir(), "out")
	g.Expect(err).NotTo(HaveOccurred())
	defer func() { _ = f.Close() }()
	g.Expect(useColor(f, env(""))).To(BeFalse(), "a file is not a terminal")

	// A pseudo-terminal is a terminal: colour, unless NO_COLOR is set.
	pty, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	g.Expect(err).NotTo(HaveOccurred(), "this test needs /dev/ptmx")
	defer func() { _ = pty.Close() }()
	g.Expect(useColor(pty, env(""))).To(BeTrue())
	g.Expect(useColor(pty, env("1"))).To(BeFalse())
}
