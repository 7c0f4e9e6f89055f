package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

func newUpCmd() *cobra.Command {
	var (
		rf                  runFlags
		file                string
		retain, buildTools  bool
		images              string
		k0sHosts, gitListen string
	)
	cmd := &cobra.Command{
		Use:   "up",
		Short: "Bring up a federation: clusters, Git server, Flux and operators",
		Long: `Bring up the federation of a topology (default: the article's three clusters on kwok).

The provider is the topology's (` + provider.Join(provider.Names(), "or", "") + `), or --provider. On kwok, up is
idempotent: what is up already is checked and kept; it never downloads: the pinned binaries
come from the toolchain cache (run ` + "`make tools`" + ` first, or pass --build-tools). On kind and
k0s, the clusters get Cilium ClusterMesh, Flux in-cluster and the operator image built here;
--dry-run prints every action and command instead. On failure or Ctrl-C up removes what it
created, unless --retain is given.`,
		Example: `  polykube-testbed up
  polykube-testbed up --topology examples/local-multicluster/topology.yaml --retain
  polykube-testbed up --provider kind --images local
  polykube-testbed up --provider k0s --dry-run`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			top := topology.Default()
			if file != "" {
				var err error
				if top, err = topology.Load(file); err != nil {
					return err
				}
			}
			opts := rf.bedOptions(cmd, top)
			opts.Retain, opts.BuildTools, opts.Images, opts.K0sHosts, opts.GitListen = retain, buildTools, images, k0sHosts, gitListen
			b, err := testbed.OpenBed(opts)
			if err != nil {
				return err
			}
			run := cmpOr(rf.run, top.Name)
			fmt.Fprintf(cmd.ErrOrStderr(), "Bringing up %q (%d clusters, provider %s)\n", run, len(top.Clusters), b.Topology().Provider)
			if err := b.Up(cmd.Context()); err != nil {
				return err
			}
			if !rf.dryRun {
				printClusters(cmd.OutOrStdout(), b, run)
			}
			return nil
		},
	}
	rf.register(cmd)
	rf.registerDryRun(cmd)
	cmd.Flags().StringVarP(&file, "topology", "t", "", "topology file (default: the embedded examples/local-multicluster/topology.yaml)")
	cmd.Flags().BoolVar(&retain, "retain", false, "keep what was created when up fails, for debugging")
	cmd.Flags().BoolVar(&buildTools, "build-tools", false, "build missing toolchain binaries from Go module source (minutes)")
	cmd.Flags().StringVar(&images, "images", "", provider.Join(provider.NamesAt(provider.AddonsInCluster), "and", "")+": upstream (pulled by the nodes) or local (built here by `polykube-testbed images build`; nothing pulled); default: the topology's images, else upstream")
	cmd.Flags().StringVar(&k0sHosts, "k0s-hosts", "", "k0s: a hosts file; installs k0s on those SSH hosts with k0sctl instead of in Docker")
	cmd.Flags().StringVar(&gitListen, "git-listen", "", "host:port of this machine that the clusters' pods reach, for the Git server (k0s on SSH hosts; existing clusters with addonPlacement: cluster)")
	return cmd
}

func printClusters(w io.Writer, b testbed.Bed, run string) {
	top := b.Topology()
	fmt.Fprintf(w, "\nThe federation %q is up on %s. Use a cluster with:\n", top.Name, top.Provider)
	for _, name := range top.ClusterNames() {
		kubeconfig, context, err := b.Kubeconfig(name)
		if err != nil {
			continue
		}
		fmt.Fprintf(w, "  kubectl --kubeconfig %s --context %s get nodes\n", kubeconfig, context)
	}
	if u := b.GitURL(); u != "" {
		fmt.Fprintf(w, "Git repository: %s\n", u)
	}
	fmt.Fprintf(w, "Health: polykube-testbed status; tear down: %s\n", downCommand(b, run))
}
