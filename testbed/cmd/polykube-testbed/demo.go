package main

import (
	"fmt"
	"os"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

func newDemoCmd() *cobra.Command {
	var (
		rf           runFlags
		keep, retain bool
		building     bool
		images       string
	)
	cmd := &cobra.Command{
		Use:   "demo",
		Short: "Tell the Polykube story on a three-cluster federation (make demo)",
		Long: `Bring up the article's three clusters and tell the story on them; tear down at the end
unless --keep (KEEP=1).

On kwok (the default): commit the billing-api Workload to Git, show each operator running
its own slice, stop GCP's API server, scale through Git while GCP is down, bring GCP back and
watch it catch up. On kind and k0s (PROVIDER=kind): with real Cilium ClusterMesh, a global
echo Service answered from every cluster, and what a stopped cluster does to the calls.`,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if rf.provider == "" {
				rf.provider = os.Getenv("PROVIDER")
			}
			if images == "" {
				images = os.Getenv("IMAGES")
			}
			if os.Getenv("KEEP") == "1" {
				keep = true
			}
			opts := rf.bedOptions(cmd, topology.Default())
			opts.Retain, opts.BuildTools, opts.Images = retain, building, images
			b, err := testbed.OpenBed(opts)
			if err != nil {
				return err
			}
			stage, ok := b.(testbed.DemoStage)
			if !ok {
				return fmt.Errorf("provider %s: its bed cannot tell the demo's story (it waits for no Workload's slices); run the demo on kwok or kind", opts.Provider)
			}
			return testbed.Demo(cmd.Context(), stage, cmd.OutOrStdout(), testbed.DemoOptions{Keep: keep, Retain: retain})
		},
	}
	rf.register(cmd)
	rf.registerDryRun(cmd)
	cmd.Flags().BoolVar(&keep, "keep", false, "keep the federation at the end (also KEEP=1)")
	cmd.Flags().BoolVar(&retain, "retain", false, "keep the federation if the demo fails")
	cmd.Flags().BoolVar(&building, "build-tools", false, "kwok: build missing toolchain binaries from Go module source (minutes)")
	cmd.Flags().StringVar(&images, "images", "", provider.Join(provider.NamesAt(provider.AddonsInCluster), "and", "")+": upstream (pulled by the nodes; the default) or local (built here by `polykube-testbed images build`; nothing pulled); also IMAGES")
	return cmd
}
