package main

import (
	"fmt"
	"os"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/gobuild"
)

// newImagesCmd is the image factory of the in-cluster bed's local mode (images: local).
func newImagesCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "images",
		Short: "Build and list the images the in-cluster bed runs with --images=local (nothing pulled)",
		Long: `The in-cluster bed's local images are built on this machine from Go module source (the
toolchain's Kubernetes, Cilium and Polykube binaries) and Debian packages, with no registry:
the kind node image (with every image kubeadm needs pre-loaded), Cilium's agent, operator and
clustermesh-apiserver, and the Polykube image. Each recipe keeps its cache (root file systems,
binaries) in the toolchain's cache directory and holds a lock while it builds; a warm rebuild
takes seconds. Building needs root and Docker (make host-docker).`,
	}
	build := &cobra.Command{
		Use:   "build [NAME...]",
		Short: "Build the local images (all, or the named ones: kind-node, cilium, polykube)",
		RunE: func(cmd *cobra.Command, args []string) error {
			src, err := sourceDir()
			if err != nil {
				return err
			}
			start := time.Now()
			if err := datapath.BuildLocalImages(cmd.Context(), src, cmd.ErrOrStderr(), args...); err != nil {
				return err
			}
			fmt.Fprintf(cmd.ErrOrStderr(), "local images ready (%s); use them with `polykube-testbed up --provider kind --images local`\n", time.Since(start).Round(time.Second))
			return nil
		},
	}
	list := &cobra.Command{
		Use:   "list",
		Short: "List the local images and whether Docker has them",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tIMAGE\tPRESENT\tSIZE\tBUILT")
			missing := 0
			for _, li := range datapath.LocalImages() {
				st, err := datapath.InspectImages(cmd.Context(), li.Refs)
				if err != nil {
					return err
				}
				for _, s := range st {
					if !s.Present {
						missing++
						fmt.Fprintf(w, "%s\t%s\tno\t-\t-\n", li.Name, s.Ref)
						continue
					}
					fmt.Fprintf(w, "%s\t%s\tyes\t%d MB\t%s\n", li.Name, s.Ref, s.Size/1e6, s.Created.Local().Format(time.DateTime))
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if missing > 0 {
				fmt.Fprintf(cmd.ErrOrStderr(), "%d images missing: polykube-testbed images build\n", missing)
			}
			return nil
		},
	}
	cmd.AddCommand(build, list)
	return cmd
}

func sourceDir() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root, err := gobuild.FindRoot(wd)
	if err != nil {
		return "", fmt.Errorf("find the Polykube checkout (the image recipes are in it): %w; run from inside it", err)
	}
	return root, nil
}
