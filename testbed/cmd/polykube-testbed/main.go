// Command polykube-testbed runs the Polykube test bed: clusters, add-ons, faults and the
// pinned toolchain they run on.
package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"

	// The beds register themselves with testbed.OpenBed: the host bed (kwok,
	// existing) and the in-cluster bed (kind, k0s, existing).
	_ "github.com/polykube/polykube/testbed/host"
	_ "github.com/polykube/polykube/testbed/incluster"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := newRootCmd().ExecuteContext(ctx)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "polykube-testbed:", err)
		os.Exit(1)
	}
}

// newRootCmd is the polykube-testbed command; each subcommand lives in its own file.
func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:           "polykube-testbed",
		Short:         "Run the Polykube test bed",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.AddCommand(
		newToolsCmd(),
		newImagesCmd(),
	)
	root.AddCommand(testbedCommands()...)
	return root
}
