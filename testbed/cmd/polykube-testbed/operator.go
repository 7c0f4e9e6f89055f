package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
)

func newOperatorCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "operator",
		Short: "Choose which operator binary a cluster runs (kwok: operators are host processes)",
	}
	cmd.AddCommand(newOperatorUseCmd())
	return cmd
}

func newOperatorUseCmd() *cobra.Command {
	var rf runFlags
	var binary string
	cmd := &cobra.Command{
		Use:   "use [--binary PATH] CLUSTER",
		Short: "Run another operator binary in one cluster, as a rollout to a new image would",
		Long: `Stop the cluster's operator gracefully and start the binary given with --binary in its
place, with the same --cluster-name, ServiceAccount token and ports; without --binary, the run's
own operator (built from this checkout) again. The choice is kept in the run's state, so up and
fault start operator keep it. It returns once the new operator answers its health probe.

This is how an upgrade moves one cluster at a time on the host bed (features/upgrade.feature):
build the previous release's operator with make previous-operator, then move each cluster.`,
		Example: `  make previous-operator
  polykube-testbed operator use --binary bin/polykube-operator-previous gcp-europe-west3
  polykube-testbed operator use gcp-europe-west3`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := rf.open(cmd)
			if err != nil {
				return err
			}
			ob, ok := b.(testbed.OperatorBinaries)
			if !ok {
				return fmt.Errorf("the operators of this run (provider %s) are not host processes: move one by changing its image in Git instead", b.Topology().Provider)
			}
			if err := ob.UseOperator(cmd.Context(), args[0], binary); err != nil {
				return err
			}
			bin, _ := ob.OperatorBinary(args[0])
			fmt.Fprintf(cmd.OutOrStdout(), "cluster %s runs the operator %s\n", args[0], bin)
			return nil
		},
	}
	cmd.Flags().StringVar(&binary, "binary", "", "the operator binary to run (default: the run's own, built from this checkout)")
	rf.register(cmd)
	return cmd
}
