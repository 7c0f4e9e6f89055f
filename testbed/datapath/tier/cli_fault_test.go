package tier

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"

	"github.com/polykube/polykube/internal/golden"
)

// faultRoot has fault and git commit commands shaped like polykube-testbed's hermetic ones
// (the hermetic fault command's own argument checks are tested with it).
func faultRoot(ran *[]string) *cobra.Command {
	root := &cobra.Command{Use: "polykube-testbed", SilenceUsage: true, SilenceErrors: true}
	hermetic := func(name string) func(*cobra.Command, []string) error {
		return func(_ *cobra.Command, args []string) error {
			*ran = append(*ran, "hermetic "+name+" "+strings.Join(args, " "))
			return nil
		}
	}
	runFlags := func(c *cobra.Command) {
		c.Flags().String("state-dir", "", "")
		c.Flags().String("run", "", "")
		c.Flags().String("source-dir", "", "")
	}
	fault := &cobra.Command{Use: "fault", Args: cobra.RangeArgs(2, 3), RunE: hermetic("fault")}
	runFlags(fault)
	git := &cobra.Command{Use: "git"}
	commit := &cobra.Command{Use: "commit DIR", Args: cobra.ExactArgs(1), RunE: hermetic("git commit")}
	runFlags(commit)
	commit.Flags().String("name", "", "")
	commit.Flags().StringP("message", "m", "", "")
	commit.Flags().Bool("wait", false, "")
	git.AddCommand(commit)
	root.AddCommand(fault, git)
	return root
}

// runCLI runs the commands with a fresh state directory and the test source tree; the
// output has the state directory replaced by <state>.
func runCLI(t *testing.T, args ...string) (string, []string, error) {
	t.Helper()
	var ran []string
	root := faultRoot(&ran)
	Extend(root)
	var out bytes.Buffer
	root.SetOut(&out)
	root.SetErr(&out)
	state := t.TempDir()
	root.SetArgs(append(args, "--state-dir", state, "--source-dir", "testdata/src"))
	err := root.Execute()
	if err != nil {
		err = errors.New(strings.ReplaceAll(err.Error(), state, "<state>"))
	}
	return strings.ReplaceAll(out.String(), state, "<state>"), ran, err
}

func TestFaultAndCommit_DryRunPlans(t *testing.T) {
	for _, tc := range []struct {
		golden string
		args   []string
	}{
		{"fault-stop-apiserver-kind.golden", []string{"fault", "stop", "apiserver", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-start-apiserver-kind.golden", []string{"fault", "start", "apiserver", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-stop-operator-kind.golden", []string{"fault", "stop", "operator", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-start-operator-kind.golden", []string{"fault", "start", "operator", "gcp-europe-west3", "--provider", "kind", "--dry-run"}},
		{"fault-stop-git-k0s.golden", []string{"fault", "stop", "git", "--provider", "k0s", "--dry-run"}},
		{"git-commit-kind.golden", []string{"git", "commit", "testdata/src/examples/echo", "--name", "echo", "-m", "workloads: echo", "--wait", "--provider", "kind", "--dry-run"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			out, ran, err := runCLI(t, tc.args...)
			if err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if len(ran) > 0 {
				t.Fatalf("the hermetic command ran: %v", ran)
			}
			golden.Assert(t, tc.golden, []byte(out))
		})
	}
}

func TestFault_DatapathErrorsAndDispatch(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
		ran  []string
	}{
		{args: []string{"fault", "stop", "flux", "gcp-europe-west3", "--provider", "kind"},
			err: "the flux fault is not supported on the datapath tier (--provider kind): use apiserver, operator or git"},
		{args: []string{"fault", "start", "flux", "onprem-fra", "--provider", "k0s", "--dry-run"},
			err: "the flux fault is not supported on the datapath tier (--provider k0s)"},
		{args: []string{"fault", "stop", "etcd", "onprem-fra", "--provider", "kind"},
			err: `unknown fault "etcd": the datapath tier supports apiserver, operator and git`},
		{args: []string{"fault", "pause", "git", "--provider", "kind"}, err: `unknown action "pause": use stop or start`},
		{args: []string{"fault", "stop", "apiserver", "alpha", "--provider", "kind", "--dry-run"},
			err: `no cluster "alpha" in the federation (clusters: aws-eu-central-1, gcp-europe-west3, onprem-fra)`},
		{args: []string{"fault", "stop", "operator", "gcp-europe-west3", "--provider", "kind"},
			err: "no datapath run in <state>/polykube-kind: run `polykube-testbed up --provider kind` first"},
		{args: []string{"fault", "stop", "git", "--dry-run"}, err: "--dry-run plans the datapath tier: add --provider kind or --provider k0s"},
		{args: []string{"git", "commit", "x", "--dry-run"}, err: "--dry-run plans the datapath tier: add --provider kind or --provider k0s"},
		{args: []string{"git", "commit", "testdata/missing", "--provider", "kind", "--dry-run"}, err: "testdata/missing"},
		{args: []string{"fault", "stop", "flux", "gcp-europe-west3"}, ran: []string{"hermetic fault stop flux gcp-europe-west3"}},
		{args: []string{"git", "commit", "dir"}, ran: []string{"hermetic git commit dir"}},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			out, ran, err := runCLI(t, tc.args...)
			if tc.err != "" {
				g.Expect(err).To(HaveOccurred(), out)
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				g.Expect(ran).To(BeEmpty())
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), out)
			g.Expect(ran).To(Equal(tc.ran))
		})
	}
}

// Like the hermetic command, the name defaults to DIR's base name and the message to
// "workloads: update <name>".
func TestGitCommit_Defaults(t *testing.T) {
	g := NewWithT(t)
	out, _, err := runCLI(t, "git", "commit", "testdata/src/examples/echo", "--provider", "kind", "--dry-run")
	g.Expect(err).NotTo(HaveOccurred(), out)
	g.Expect(out).To(ContainSubstring("commit to http://<git-server>/polykube/gitops.git: workloads: update echo (workloads/echo/namespace.yaml, "))
	g.Expect(out).NotTo(ContainSubstring("wait until"), "no --wait")
}
