package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed/host"
)

func newDownCmd() *cobra.Command {
	var (
		rf  runFlags
		all bool
	)
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Tear down a run (or, with --all, every run of every provider) and check nothing is left",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all {
				runs, err := host.DownAll(cmd.Context(), host.Options{StateRoot: rf.stateDir, Log: cmd.ErrOrStderr()})
				for _, r := range runs {
					fmt.Fprintf(cmd.OutOrStdout(), "removed run %s\n", r)
				}
				if err == nil && len(runs) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "no runs to remove")
				}
				return err
			}
			b, err := rf.selectRun(cmd)
			if err != nil {
				return err
			}
			if !b.Exists() {
				fmt.Fprintf(cmd.OutOrStdout(), "no %s run %q in %s\n", b.Topology().Provider, rf.runName(b), rf.root())
				return nil
			}
			if err := b.Down(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed run %s (%s)\n", rf.runName(b), b.Topology().Provider)
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "remove every run under the state directory, of every provider, including ones left by failed runs")
	return cmd
}
