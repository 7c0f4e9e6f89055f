package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/topology"
)

func newUpCmd() *cobra.Command {
	var (
		rf         runFlags
		file       string
		retain     bool
		buildTools bool
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring up a federation: clusters, Git server, Flux and operators",
		Long: `Bring up the federation of a topology (default: the article's three clusters on kwok).

up is idempotent: what is up already is checked and kept. It never downloads: the pinned
binaries come from the toolchain cache (run ` + "`make tools`" + ` first, or pass --build-tools).
On failure or Ctrl-C it removes what it created, unless --retain is given.`,
		Example: `  polykube-testbed up
  polykube-testbed up --topology examples/local-multicluster/topology.yaml --retain`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			top := topology.Default()
			if file != "" {
				var err error
				if top, err = topology.Load(file); err != nil {
					return err
				}
			}
			opts := rf.options(cmd, top)
			opts.BuildTools = buildTools
			tb, err := testbed.Open(opts)
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "Bringing up %q (%d clusters, provider %s) in %s\n", top.Name, len(top.Clusters), top.Provider, tb.Dir())
			if err := tb.Up(cmd.Context(), testbed.UpOptions{Retain: retain, SelfBinary: selfBinary()}); err != nil {
				return err
			}
			printClusters(cmd.OutOrStdout(), tb)
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVarP(&file, "topology", "t", "", "topology file (default: the embedded examples/local-multicluster/topology.yaml)")
	cmd.Flags().BoolVar(&retain, "retain", false, "keep what was created when up fails, for debugging")
	cmd.Flags().BoolVar(&buildTools, "build-tools", false, "build missing toolchain binaries from Go module source (minutes)")
	return cmd
}

func printClusters(w io.Writer, tb *testbed.Testbed) {
	fmt.Fprintf(w, "\nThe federation %q is up. Use a cluster with:\n", tb.Topology().Name)
	for _, name := range tb.Topology().ClusterNames() {
		cl, err := tb.Cluster(name)
		if err != nil {
			continue
		}
		fmt.Fprintf(w, "  kubectl --kubeconfig %s --context %s get nodes\n", cl.Kubeconfig, cl.Context)
	}
	if u := tb.GitURL(); u != "" {
		fmt.Fprintf(w, "Git repository: %s\n", u)
	}
	fmt.Fprintf(w, "Health: polykube-testbed status; tear down: polykube-testbed down\n")
}
