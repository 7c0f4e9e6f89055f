package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
)

func newFaultCmd() *cobra.Command {
	var rf runFlags
	var names []string
	for _, f := range testbed.Faults {
		names = append(names, string(f))
	}
	cmd := &cobra.Command{
		Use:   "fault stop|start " + strings.Join(names, "|") + " [CLUSTER]",
		Short: "Break or repair part of the federation; returns once the fault is in effect",
		Long: `Break (stop) or repair (start) part of the federation:

  apiserver CLUSTER   the cluster's control plane (state is kept)
  operator CLUSTER    the cluster's operator process (stop kills it)
  flux CLUSTER        the cluster's Flux controllers
  git                 the federation's Git server

Each returns once the fault is in effect: for example, stop apiserver returns when the API
server no longer answers, start apiserver when it is ready again.`,
		Example: `  polykube-testbed fault stop apiserver gcp-europe-west3
  polykube-testbed fault start apiserver gcp-europe-west3
  polykube-testbed fault stop git`,
		Args: cobra.RangeArgs(2, 3),
		RunE: func(cmd *cobra.Command, args []string) error {
			action, f := args[0], testbed.Fault(args[1])
			if !slices.Contains(testbed.Faults, f) {
				return fmt.Errorf("unknown fault %q: use one of %s", f, strings.Join(names, ", "))
			}
			cluster := ""
			switch {
			case f == testbed.FaultGit && len(args) == 3:
				return fmt.Errorf("the git fault takes no cluster: the Git server serves the whole federation")
			case f != testbed.FaultGit && len(args) != 3:
				return fmt.Errorf("the %s fault needs a CLUSTER", f)
			case len(args) == 3:
				cluster = args[2]
			}
			tb, err := rf.open(cmd)
			if err != nil {
				return err
			}
			switch action {
			case "stop":
				err = tb.Break(cmd.Context(), f, cluster)
			case "start":
				err = tb.Repair(cmd.Context(), f, cluster)
			default:
				return fmt.Errorf("unknown action %q: use stop or start", action)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(cmd.OutOrStdout(), "%s %s %s: done\n", action, f, cluster)
			return nil
		},
	}
	rf.register(cmd)
	return cmd
}
