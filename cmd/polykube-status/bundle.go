package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/internal/status"
)

func (c *cli) bundleCommand() *cobra.Command {
	var file, operatorNS string
	var tail int64
	cmd := &cobra.Command{
		Use:   "bundle -o FILE.tar.gz (--context NAME... | --contexts-file FILE) [--tail 500]",
		Short: "Write a support bundle of the named clusters, read-only, without Secrets or env values",
		Long: `Reads each named context with the same read-only client as the fleet view and writes one
tar.gz: per cluster the Polykube objects (all five kinds), the Deployments, Services and HPAs
Polykube manages, the events about them, the operator's pods and the last --tail lines of their
logs, the Flux Kustomizations, GitRepositories and OCIRepositories and the Argo CD Applications
that deliver Polykube (where those CRDs exist), and Cilium's cluster-name, cluster-id and
clustermesh settings; README.txt and index.yaml say what each cluster's part holds and what is
missing, and why.

Never in it: Secrets (the client has no Secret kind), the value of any environment variable
(every env[].value reads <redacted>; valueFrom references are kept), Flux post-build
substitutions and Argo CD Helm values, ConfigMap data other than Cilium's mesh keys, kubectl's
last-applied-configuration annotation. Args, events and log lines are kept: read the bundle
before you share it.

The contexts must be named (--context or --contexts-file): a bundle leaves this machine, so
which clusters go into it is a choice, not whatever the kubeconfig holds. FILE must not exist.
Without -n it covers every namespace.

Permissions: the ClusterRole polykube-status-reader (gitops/status-reader) and, for the
operator's pods and logs, the Role polykube-status-operator-logs in the operator's namespace
(gitops/status-reader/operator-logs).

Exit codes: 0 every section of every cluster was read (or is absent there: no Flux, no Cilium);
3 some cluster or section could not be read (the bundle is still written and says what is
missing); 2 usage error; 1 internal error (no bundle).`,
		Example: `  polykube-status bundle -o support.tar.gz --context alpha --context beta
  polykube-status bundle -o support.tar.gz --contexts-file fleet.txt -n shop --tail 2000`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			if file == "" {
				return status.Usagef("bundle needs the file to write: -o FILE.tar.gz")
			}
			if c.allContexts {
				return status.Usagef("bundle reads only contexts you name: use --context NAME (repeatable) or --contexts-file FILE instead of --all-contexts")
			}
			if tail <= 0 {
				return status.Usagef("--tail must be at least 1, got %d", tail)
			}
			if _, err := os.Stat(file); err == nil {
				return status.Usagef("%s exists: remove it or choose another file", file)
			} else if !errors.Is(err, fs.ErrNotExist) {
				return fmt.Errorf("check %s: %w", file, err)
			}
			// A support bundle covers every namespace unless one is asked for.
			saved, savedAll := c.output, c.allNamespaces
			c.output, c.allNamespaces = status.FormatTable, c.namespace == ""
			targets, q, err := c.fleetTargets()
			c.output, c.allNamespaces = saved, savedAll
			if err != nil {
				return err
			}
			// Written beside FILE and renamed at the end: an interrupted run leaves no
			// half-written bundle under the name asked for.
			tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".*")
			if err != nil {
				return fmt.Errorf("create the bundle next to %s: %w", file, err)
			}
			defer os.Remove(tmp.Name())
			idx, err := status.WriteBundle(cmd.Context(), tmp, targets, status.BundleOptions{
				Namespace: q.Namespace, Tail: tail, OperatorNamespace: operatorNS, Timeout: q.Timeout, Parallel: q.Parallel,
			})
			if cerr := tmp.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return fmt.Errorf("write the bundle: %w", err)
			}
			if err := os.Chmod(tmp.Name(), 0o600); err != nil {
				return err
			}
			if err := os.Rename(tmp.Name(), file); err != nil {
				return fmt.Errorf("move the bundle to %s: %w", file, err)
			}
			fmt.Fprint(c.stdout, status.BundleSummary(idx, file))
			c.exitCode = idx.ExitCode
			return nil
		},
	}
	cmd.Flags().StringVarP(&file, "output", "o", "", "the tar.gz file to write (must not exist)")
	cmd.Flags().Int64Var(&tail, "tail", status.DefaultBundleTail, "how many of the last log lines of each operator container to keep")
	cmd.Flags().StringVar(&operatorNS, "operator-namespace", status.DefaultOperatorNamespace, "the namespace the operator runs in")
	return cmd
}
