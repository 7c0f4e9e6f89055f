package main

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/meshmirror"
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

// newServeMeshMirrorCmd is the mesh-mirror process `up` starts (the mesh-mirror add-on); it
// is not meant to be run by hand.
func newServeMeshMirrorCmd() *cobra.Command {
	var clusters []string
	var listen string
	var interval, ttl time.Duration
	cmd := &cobra.Command{
		Use:    "serve-mesh-mirror",
		Short:  "Copy global Services' EndpointSlices between clusters as Cilium would (started by up)",
		Hidden: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var cs []meshmirror.Cluster
			for _, c := range clusters {
				name, path, ok := strings.Cut(c, "=")
				if !ok {
					return fmt.Errorf("--cluster %q: want NAME=KUBECONFIG", c)
				}
				cl, err := meshmirror.ClusterFromKubeconfig(name, path)
				if err != nil {
					return err
				}
				cs = append(cs, cl)
			}
			m, err := meshmirror.New(cs, meshmirror.Options{Interval: interval, CacheTTL: ttl, Log: cmd.OutOrStdout()})
			if err != nil {
				return err
			}
			return m.Serve(cmd.Context(), listen)
		},
	}
	cmd.Flags().StringArrayVar(&clusters, "cluster", nil, "NAME=KUBECONFIG of a cluster to mirror between (repeat for each)")
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "host:port of /healthz and /status")
	cmd.Flags().DurationVar(&interval, "interval", time.Second, "how often to read every cluster and write the mirrored slices")
	cmd.Flags().DurationVar(&ttl, "cache-ttl", 5*time.Second, "how long an unreachable cluster's mirrored slices are kept (0: for ever)")
	return cmd
}
