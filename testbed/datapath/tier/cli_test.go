package tier

import (
	"bytes"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/spf13/cobra"
)

// fakeRoot has up and demo commands shaped like polykube-testbed's hermetic ones.
func fakeRoot(ran *[]string) *cobra.Command {
	root := &cobra.Command{Use: "polykube-testbed", SilenceUsage: true, SilenceErrors: true}
	up := &cobra.Command{Use: "up", RunE: func(*cobra.Command, []string) error { *ran = append(*ran, "hermetic up"); return nil }}
	up.Flags().String("state-dir", "", "")
	up.Flags().String("topology", "", "")
	demo := &cobra.Command{Use: "demo", RunE: func(*cobra.Command, []string) error { *ran = append(*ran, "hermetic demo"); return nil }}
	demo.Flags().String("provider", "", "")
	demo.Flags().String("state-dir", "", "")
	root.AddCommand(up, demo)
	return root
}

func TestExtend_DispatchesByProvider(t *testing.T) {
	state := t.TempDir()
	t.Setenv("PROVIDER", "")
	for _, tc := range []struct {
		args    []string
		ran     []string
		err     string
		printed string
	}{
		{args: []string{"up", "--provider", "kind", "--dry-run"}, printed: "helm upgrade --install cilium kube-system/cilium (chart install/kubernetes/cilium of github.com/cilium/cilium@v1.20.2) in kind-aws-eu-central-1"},
		{args: []string{"up", "--provider", "k0s", "--dry-run"}, printed: "/polykube-k0s/clusters/onprem-fra/k0s.yaml"},
		{args: []string{"up"}, ran: []string{"hermetic up"}},
		{args: []string{"up", "--dry-run"}, err: "--dry-run plans the datapath tier"},
		{args: []string{"up", "--provider", "existing"}, err: "set `provider: existing` in the topology file"},
		{args: []string{"demo"}, ran: []string{"hermetic demo"}},
		{args: []string{"demo", "--provider", "kind", "--dry-run"}, printed: "calls the global Service polykube-demo/echo 60 times"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			g := NewWithT(t)
			var ran []string
			root := fakeRoot(&ran)
			Extend(root)
			var out bytes.Buffer
			root.SetOut(&out)
			root.SetErr(&out)
			root.SetArgs(append(tc.args, "--state-dir", state))
			err := root.Execute()
			if tc.err != "" {
				g.Expect(err).To(MatchError(ContainSubstring(tc.err)))
				return
			}
			g.Expect(err).NotTo(HaveOccurred(), out.String())
			g.Expect(ran).To(Equal(tc.ran))
			g.Expect(out.String()).To(ContainSubstring(tc.printed))
		})
	}
}
