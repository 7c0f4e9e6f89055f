// Command polykube-status is the read-only fleet view of Polykube: it queries every named
// kubeconfig context in parallel, merges what each cluster's operator reports, and flags where
// the clusters disagree. Installed as kubectl-polykube it is also `kubectl polykube status`.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/polykube/polykube/internal/status"
)

func main() {
	// The same binary runs each context's exec credential plugin, so that the plugin ends with
	// the run (status.GuardExecPlugins says why).
	if status.ExecShimRequested() {
		os.Exit(status.RunExecShim())
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}
