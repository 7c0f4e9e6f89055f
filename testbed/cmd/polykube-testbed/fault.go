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
		Short: "Stop or start part of the federation; returns once the fault is in effect",
		Long: `Stop (put a fault in effect) or start (end it) part of the federation:

  apiserver CLUSTER   the cluster's control plane (state is kept)
  operator CLUSTER    the cluster's operator process (stop kills it)
  flux CLUSTER        the cluster's Flux controllers
  git                 the federation's Git server

Each returns once the fault is in effect: for example, stop apiserver returns when the API
server no longer answers, start apiserver when it is ready again.`,
		Example: `  polykube-testbed fault stop apiserver gcp-europe-west3
  polykube-testbed fault start apiserver gcp-europe-west3
  polykube-testbed fault stop git`,
		// The arguments are checked before RunE, so that a tier that wraps RunE (the datapath
		// tier's --provider) gets the same checks and messages.
		Args: faultArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			action, f, cluster := args[0], testbed.Fault(args[1]), ""
			if len(args) == 3 {
				cluster = args[2]
			}
			tb, err := rf.open(cmd)
			if err != nil {
				return err
			}
			if action == "stop" {
				err = tb.Stop(cmd.Context(), f, cluster)
			} else {
				err = tb.Start(cmd.Context(), f, cluster)
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

// faultArgs checks `fault ACTION FAULT [CLUSTER]`: stop or start, a known fault, and a
// cluster exactly when the fault is per cluster (every fault but git).
func faultArgs(_ *cobra.Command, args []string) error {
	if err := cobra.RangeArgs(2, 3)(nil, args); err != nil {
		return fmt.Errorf("%w: use fault stop|start FAULT [CLUSTER]", err)
	}
	action, f := args[0], testbed.Fault(args[1])
	if action != "stop" && action != "start" {
		return fmt.Errorf("unknown action %q: use stop or start", action)
	}
	if !slices.Contains(testbed.Faults, f) {
		var names []string
		for _, f := range testbed.Faults {
			names = append(names, string(f))
		}
		return fmt.Errorf("unknown fault %q: use one of %s", f, strings.Join(names, ", "))
	}
	switch {
	case f == testbed.FaultGit && len(args) == 3:
		return fmt.Errorf("the git fault takes no cluster: the Git server serves the whole federation")
	case f != testbed.FaultGit && len(args) != 3:
		return fmt.Errorf("the %s fault needs a CLUSTER", f)
	}
	return nil
}
