package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
)

func newDownCmd() *cobra.Command {
	var (
		rf  runFlags
		all bool
	)
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Tear down a run (or, with --all, every run) and check nothing is left",
		RunE: func(cmd *cobra.Command, _ []string) error {
			if all {
				runs, err := testbed.DownAll(cmd.Context(), rf.options(cmd, nil))
				for _, r := range runs {
					fmt.Fprintf(cmd.OutOrStdout(), "removed run %s\n", r)
				}
				if err == nil && len(runs) == 0 {
					fmt.Fprintln(cmd.OutOrStdout(), "no runs to remove")
				}
				return err
			}
			opts, err := rf.selectRun(cmd)
			if err != nil {
				return err
			}
			tb, err := testbed.Open(opts)
			if err != nil {
				return err
			}
			if !tb.Exists() {
				fmt.Fprintf(cmd.OutOrStdout(), "no run in %s\n", tb.Dir())
				return nil
			}
			if err := tb.Down(cmd.Context()); err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "removed run %s\n", tb.Dir())
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().BoolVar(&all, "all", false, "remove every run under the state directory, including ones left by failed runs")
	return cmd
}
