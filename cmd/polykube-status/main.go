// Command polykube-status is the read-only fleet view of Polykube: it queries every named
// kubeconfig context in parallel, merges what each cluster's operator reports, and flags where
// the clusters disagree. Installed as kubectl-polykube it is also `kubectl polykube status`.
package main

import (
	"context"
	"os"
	"os/signal"
	"runtime/debug"
	"syscall"

	"github.com/polykube/polykube/internal/status"
)

func main() {
	// The same binary runs each context's exec credential plugin, so that the plugin ends with
	// the run (status.GuardExecPlugins says why).
	if status.ExecShimRequested() {
		os.Exit(status.RunExecShim())
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(memoryLimit)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args, os.Stdout, os.Stderr, os.Getenv)
	stop()
	os.Exit(code)
}

// memoryLimit is the soft limit of the Go heap (GOMEMLIMIT overrides it). A run over many
// clusters keeps little (the compact form of each cluster's objects, about 120 MiB at 50
// clusters of 1,000 Workloads) but decodes much more on the way; with GOGC alone the heap
// would grow to twice what it keeps before each collection. Under the limit the collector runs
// earlier instead, and it never takes more than half the CPU to stay under it: a fleet whose
// compact form outgrows it is read more slowly, not stopped.
const memoryLimit = 160 << 20
