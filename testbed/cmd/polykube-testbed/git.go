package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
)

func newGitCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "git",
		Short: "Work with the run's Git repository",
	}
	var (
		rf          runFlags
		name, msg   string
		waitApplied bool
	)
	commit := &cobra.Command{
		Use:   "commit DIR",
		Short: "Commit the YAML files of DIR to workloads/<name>/ and print the revision",
		Long: `Commit the YAML files of DIR to workloads/<name>/ of the served repository (name defaults
to DIR's base name; what was there is replaced), ask Flux to fetch it, and print the revision.
With --wait, return once Flux in every cluster applied it. On kind and k0s, --dry-run prints
what would be done.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			b, err := rf.open(cmd)
			if err != nil {
				return err
			}
			rev, err := testbed.CommitDir(cmd.Context(), b, args[0], name, msg)
			if err != nil {
				return err
			}
			if !rf.dryRun {
				fmt.Fprintln(cmd.OutOrStdout(), rev)
			}
			if waitApplied {
				return b.WaitDelivered(cmd.Context(), rev)
			}
			return nil
		},
	}
	rf.register(commit)
	rf.registerDryRun(commit)
	commit.Flags().StringVar(&name, "name", "", "directory under workloads/ (default: DIR's base name)")
	commit.Flags().StringVarP(&msg, "message", "m", "", "commit message")
	commit.Flags().BoolVar(&waitApplied, "wait", false, "wait until Flux in every cluster applied the commit")
	cmd.AddCommand(commit)
	return cmd
}
