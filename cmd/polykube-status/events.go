package main

import (
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/internal/status"
)

func (c *cli) eventsCommand() *cobra.Command {
	var since time.Duration
	cmd := &cobra.Command{
		Use:   "events (--context NAME... | --contexts-file FILE | --all-contexts) [--since 1h]",
		Short: "Recent events about Polykube objects across clusters, merged by time",
		Long: `Lists the events (events.k8s.io/v1, or core/v1 where that API is not served) whose object is
of the group polykube.kismet.io, or is a Deployment, Service or HorizontalPodAutoscaler labelled
app.kubernetes.io/managed-by=polykube, in every context given, oldest first, each with its
cluster. --since drops events last seen longer ago (default 1h; 0 keeps every event the API
servers still hold, usually an hour's worth).

Exit codes: 0 every context was read; 3 some context could not be read (the others are still
shown); 2 usage error; 1 internal error.`,
		Example: `  polykube-status events --context alpha --context beta -n shop
  polykube-status events --all-contexts -A --since 10m -o json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if since < 0 {
				return status.Usagef("--since must not be negative, got %s", since)
			}
			targets, q, err := c.fleetTargets()
			if err != nil {
				return err
			}
			ev := status.CollectEvents(cmd.Context(), targets, status.EventsQuery{Namespace: q.Namespace, Since: since, Timeout: q.Timeout, Parallel: q.Parallel})
			if err := cmd.Context().Err(); err != nil {
				return fmt.Errorf("interrupted: %w", err)
			}
			if err := status.PrintEvents(c.stdout, ev, c.output, status.PrintOptions{Color: c.color}); err != nil {
				return err
			}
			c.exitCode = ev.ExitCode
			return nil
		},
	}
	cmd.Flags().DurationVar(&since, "since", status.DefaultEventsSince, "only events last seen within this long")
	return cmd
}

// fleetTargets checks the flags shared by the commands that read clusters and resolves the
// contexts and the namespace they name.
func (c *cli) fleetTargets() ([]status.Target, status.Query, error) {
	var q status.Query
	if err := status.ValidateFormat(c.output); err != nil {
		return nil, q, err
	}
	if c.timeout <= 0 {
		return nil, q, status.Usagef("--timeout must be positive, got %s", c.timeout)
	}
	if c.parallel <= 0 {
		return nil, q, status.Usagef("--parallel must be at least 1, got %d", c.parallel)
	}
	if c.namespace != "" && c.allNamespaces {
		return nil, q, status.Usagef("--namespace and --all-namespaces exclude each other: pick one")
	}
	if c.wait > 0 || c.watch {
		return nil, q, status.Usagef("--wait and --watch apply to the fleet view only")
	}
	targets, err := status.ResolveTargets(status.ContextSelection{
		Kubeconfig: c.kubeconfig, Contexts: c.contexts, ContextsFile: c.contextsFile, All: c.allContexts,
	})
	if err != nil {
		return nil, q, err
	}
	if self, err := os.Executable(); err == nil {
		status.GuardExecPlugins(targets, self)
	}
	q = status.Query{Namespace: c.namespace, Timeout: c.timeout, Parallel: c.parallel}
	if c.namespace == "" && !c.allNamespaces {
		if q.Namespace, err = status.DefaultNamespace(targets); err != nil {
			return nil, q, err
		}
	}
	return targets, q, nil
}
