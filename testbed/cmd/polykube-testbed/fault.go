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

  apiserver CLUSTER   the cluster's control plane, its state kept. kwok: its API server
                      process; kind (and k0s in Docker): docker stop of its node containers,
                      so everything in the cluster stops; k0s hosts: sudo k0s stop over SSH.
                      start waits for the API server (and on kind and k0s the operator)
  operator CLUSTER    the cluster's operator. kwok: its process (stop kills it); kind and
                      k0s: its Deployment scaled to 0 with Flux told to leave it so, its pods
                      killed; start gives it its replicas back and hands it to Flux
  flux CLUSTER        the cluster's Flux controllers (source- and kustomize-controller).
                      kwok and existing: their processes; kind and k0s: their Deployments scaled to 0;
                      start gives them their replicas back
  git                 the federation's Git server
  network CLUSTER     a network partition: every packet between the cluster's node
                      containers and every other cluster's is dropped (iptables in the
                      nodes), both ways; the host still reaches every API server, each side
                      keeps serving its own endpoints. kind only (kwok has no network)

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
	if !slices.Contains(testbed.Faults, f) {
		return testbed.UnknownFault(f)
	}
	switch {
	case f == testbed.FaultGit && len(args) == 3:
		return fmt.Errorf("the git fault takes no cluster: the Git server serves the whole federation")
	case f != testbed.FaultGit && len(args) != 3:
		return fmt.Errorf("the %s fault needs a CLUSTER", f)
	}
	return nil
}
