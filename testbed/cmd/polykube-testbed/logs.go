package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"
)

func newLogsCmd() *cobra.Command {
	var (
		rf   runFlags
		dest string
	)
	cmd := &cobra.Command{
		Use:   "logs",
		Short: "Collect a diagnostics bundle: every log, events, Flux and Polykube objects of every cluster",
		RunE: func(cmd *cobra.Command, _ []string) error {
			b, err := rf.open(cmd)
			if err != nil {
				return err
			}
			if dest == "" {
				dest = fmt.Sprintf("polykube-testbed-logs-%s", time.Now().Format("20060102-150405"))
			}
			err = b.Diagnose(cmd.Context(), dest)
			fmt.Fprintf(cmd.OutOrStdout(), "diagnostics in %s\n", dest)
			return err
		},
	}
	rf.register(cmd)
	cmd.Flags().StringVarP(&dest, "output", "o", "", "directory for the bundle (default ./polykube-testbed-logs-<time>)")
	return cmd
}
