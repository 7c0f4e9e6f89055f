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

` + faultHelp() + `
Each returns once the fault is in effect: for example, stop apiserver returns when the API
server no longer answers, start apiserver when it is ready again. On kind and k0s, --dry-run
prints what would be done.`,
		Example: `  polykube-testbed fault stop apiserver gcp-europe-west3
  polykube-testbed fault start apiserver gcp-europe-west3
  polykube-testbed fault stop git
  polykube-testbed fault stop operator gcp-europe-west3 --provider kind
  polykube-testbed fault stop network gcp-europe-west3 --provider kind`,
		Args: faultArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			action, f, cluster := args[0], testbed.Fault(args[1]), ""
			if len(args) == 3 {
				cluster = args[2]
			}
			b, err := rf.open(cmd)
			if err != nil {
				return err
			}
			if action == "stop" {
				err = b.Stop(cmd.Context(), f, cluster)
			} else {
				err = b.Start(cmd.Context(), f, cluster)
			}
			if err != nil {
				return err
			}
			if !rf.dryRun {
				fmt.Fprintf(cmd.OutOrStdout(), "%s: done\n", strings.TrimSpace(fmt.Sprintf("%s %s %s", action, f, cluster)))
			}
			return nil
		},
	}
	rf.register(cmd)
	rf.registerDryRun(cmd)
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
	k, err := testbed.KindOf(f)
	if err != nil {
		return err
	}
	switch {
	case !k.PerCluster && len(args) == 3:
		return fmt.Errorf("the %s fault takes no cluster: it stops %s, which serves the whole federation", f, k.Target(""))
	case k.PerCluster && len(args) != 3:
		return fmt.Errorf("the %s fault needs a CLUSTER: it stops %s", f, k.Target("CLUSTER"))
	}
	return nil
}

// faultHelp lists the faults of the table with their help, one block per fault, ending with
// the providers that can have it when it needs a capability:
//
//	name CLUSTER        first line of its help
//	                    next line
func faultHelp() string {
	const indent = 22
	var b strings.Builder
	for _, k := range testbed.FaultKinds {
		head := "  " + string(k.Fault)
		if k.PerCluster {
			head += " CLUSTER"
		}
		lines := k.Help
		if k.Needs != "" {
			lines = append(slices.Clone(lines), fmt.Sprintf("(needs the %s capability: %s)", k.Needs, strings.Join(k.Providers(), ", ")))
		}
		for i, line := range lines {
			if i == 0 {
				fmt.Fprintf(&b, "%-*s%s\n", indent, head+" ", line)
				continue
			}
			fmt.Fprintf(&b, "%s%s\n", strings.Repeat(" ", indent), line)
		}
	}
	return b.String()
}
