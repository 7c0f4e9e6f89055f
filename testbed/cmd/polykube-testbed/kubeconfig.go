package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
)

func newKubeconfigCmd() *cobra.Command {
	var (
		rf       runFlags
		operator bool
	)
	cmd := &cobra.Command{
		Use:     "kubeconfig CLUSTER",
		Short:   "Print the path of a cluster's kubeconfig (admin, or with --operator the operator's token)",
		Example: `  kubectl --kubeconfig "$(polykube-testbed kubeconfig aws-eu-central-1)" get nodes`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := rf.open(cmd)
			if err != nil {
				return err
			}
			path, _, err := b.Kubeconfig(args[0])
			if err != nil {
				return err
			}
			if operator {
				ok, isProcess := b.(testbed.OperatorKubeconfigs)
				if !isProcess {
					return fmt.Errorf("on %s the operator runs in its cluster as its ServiceAccount and has no kubeconfig file: use the admin kubeconfig, or `kubectl create token` for the ServiceAccount", b.Topology().Provider)
				}
				if path = ok.OperatorKubeconfig(args[0]); path == "" {
					return fmt.Errorf("cluster %s has no operator: the run has no operator add-on or it is not up", args[0])
				}
			}
			fmt.Fprintln(cmd.OutOrStdout(), path)
			return nil
		},
	}
	rf.register(cmd)
	cmd.Flags().BoolVar(&operator, "operator", false, "the kubeconfig of the cluster's operator (its ServiceAccount token)")
	return cmd
}
