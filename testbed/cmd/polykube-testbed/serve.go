package main

import (
	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed/gitrepo"
)

// newServeGitCmd is the Git server process `up` starts; it is not meant to be run by hand.
func newServeGitCmd() *cobra.Command {
	var root, listen string
	cmd := &cobra.Command{
		Use:    "serve-git",
		Short:  "Serve the test bed's Git repositories over smart HTTP (started by up)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return gitrepo.Serve(cmd.Context(), root, listen)
		},
	}
	cmd.Flags().StringVar(&root, "root", "", "directory holding the repositories")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "host:port to listen on")
	_ = cmd.MarkFlagRequired("root")
	return cmd
}
