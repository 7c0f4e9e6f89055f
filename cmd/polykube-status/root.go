package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/plan"
)

// pluginName is the binary name under which kubectl finds this command as `kubectl polykube`.
const pluginName = "kubectl-polykube"

const exitCodesHelp = `Exit codes:
  0  every cluster was read, the clusters agree, and everything is ready
  1  internal error (nothing was reported)
  2  usage error: the command line is wrong (nothing was queried)
  3  some cluster could not be read (unreachable, timeout, unauthorized, forbidden, CRDs missing)
  4  the clusters disagree (specs, allocations, effective templates, failover replicas,
     rosters, unreported or untargeted slices)
  5  something is not ready (a slice, a Federation, a ServiceEndpoint or DatastoreBinding,
     or a named Workload that does not exist)
  6  plan: a manifest holds an invalid Workload
  7  an operator reports a failure (a Workload, ServiceEndpoint or DatastoreBinding whose
     Ready condition is False for ReconcileFailed, InvalidSpec, Conflict, SecretNotFound, ...,
     or an operator that refused to run as another member: IdentityMismatch)
When several apply, the first of 3, 7, 4 and 5 wins: an incomplete view comes first, then a
failure an operator reports, then disagreement, then readiness. Warnings do not change it.
The JSON/YAML summary lists every finding either way.`

// cli holds the flags and streams of one invocation.
type cli struct {
	stdout, stderr io.Writer
	color          bool
	// terminal: stdout is a terminal, so --watch redraws in place.
	terminal bool
	exitCode int

	kubeconfig    string
	contexts      []string
	contextsFile  string
	allContexts   bool
	timeout       time.Duration
	parallel      int
	output        string
	namespace     string
	allNamespaces bool
	wait          time.Duration
	watch         bool

	planFiles     []string
	planCluster   string
	planDown      []string
	planDiff      bool
	planKustomize bool
}

// run executes the command line args (args[0] is the program name) and returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	c := &cli{stdout: stdout, stderr: stderr, color: useColor(stdout, getenv), terminal: isTerminal(stdout)}
	name := "polykube-status"
	rest := args[1:]
	if len(args) > 0 && strings.TrimSuffix(filepath.Base(args[0]), ".exe") == pluginName {
		name = "kubectl polykube status"
		if len(rest) > 0 && rest[0] == "status" {
			rest = rest[1:]
		}
	}
	root := c.rootCommand(name)
	root.SetArgs(rest)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	switch {
	case err == nil:
		return c.exitCode
	case status.IsUsage(err):
		path := name
		if cmd != nil {
			path = cmd.CommandPath()
		}
		fmt.Fprintf(stderr, "Error: %v\nRun '%s --help' for usage.\n", err, path)
		return status.ExitUsage
	default:
		fmt.Fprintf(stderr, "Error: %v\n", err)
		return status.ExitInternal
	}
}

// useColor is true only when stdout is a terminal and NO_COLOR is unset.
func useColor(stdout io.Writer, getenv func(string) string) bool {
	if getenv("NO_COLOR") != "" {
		return false
	}
	return isTerminal(stdout)
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

func (c *cli) rootCommand(name string) *cobra.Command {
	root := &cobra.Command{
		Use:         "polykube-status [WORKLOAD...] (--context NAME... | --contexts-file FILE | --all-contexts)",
		Annotations: map[string]string{cobra.CommandDisplayNameAnnotation: name},
		Short:       "Read-only status of Polykube Workloads across clusters",
		Long: `Queries the named kubeconfig contexts, --parallel at a time and each with its own --timeout
(exec credential plugins included), merges the status each cluster's operator wrote, and flags
where the clusters disagree. It only reads (get/list): bind the ClusterRole
polykube-status-reader (gitops/status-reader) to its users.

WORKLOAD arguments filter by name; shell patterns such as 'billing-*' are allowed.
Each cluster cell reads READY/DESIRED PHASE; '-' means the cluster is not a target, '?' that
the cluster could not be read, 'absent' that it has no copy of the Workload, 'Suspended' that
the copy has spec.suspend there (a notice, not a failure). While a cluster
absorbs peers' share (distribution.failover) it reads READY/BASE+EXTRA PHASE, and a
FailoverActive notice, which does not change the exit code, says for which peers.

With --wait[=TIMEOUT] (default 5m) it re-reads the fleet every second until the report would
exit 0, then prints it; at the timeout it prints the last report with its exit code. What it
still waits for goes to stderr whenever that changes.

With --watch it prints the report, then prints it again whenever it changes, until Ctrl-C;
the exit code is then that of the last report. Changes are learnt from API watches on the kinds
it reads (one per kind per cluster), each opened within --timeout; a cluster whose watch fails
is marked in the report and its watches are opened again with a backoff (1s up to 30s). On a
terminal the table is redrawn in place; otherwise each report follows the last (YAML documents
separated by ---).

` + exitCodesHelp,
		Example: `  polykube-status --context alpha --context beta
  polykube-status billing-api -n shop --all-contexts -o json
  polykube-status federation --contexts-file fleet.txt
  polykube-status --all-contexts -A --wait=10m     # exit 0 once the fleet agrees and is ready
  polykube-status --context alpha --context beta --watch
  polykube-status events --context alpha --context beta --since 1h
  polykube-status bundle -o support.tar.gz --context alpha --context beta
  polykube-status plan -f gitops/workloads --cluster beta
  polykube-status plan --diff old-checkout/gitops new-checkout/gitops
  kubectl polykube status --all-contexts        # when installed as kubectl-polykube`,
		SilenceUsage:  true,
		SilenceErrors: true,
		Args:          cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			return c.runFleet(cmd.Context(), args, status.ViewWorkloads)
		},
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return status.Usagef("%v", err) })

	pf := root.PersistentFlags()
	pf.StringVar(&c.kubeconfig, "kubeconfig", "", "path to the kubeconfig file (default: $KUBECONFIG, several paths merged, or ~/.kube/config)")
	pf.StringArrayVar(&c.contexts, "context", nil, "kubeconfig context to query; repeat for each cluster")
	pf.StringVar(&c.contextsFile, "contexts-file", "", "file with one context name per line ('#' starts a comment)")
	pf.BoolVar(&c.allContexts, "all-contexts", false, "query every context of the kubeconfig")
	pf.DurationVar(&c.timeout, "timeout", status.DefaultTimeout, "time allowed to each cluster, its exec credential plugin included")
	pf.IntVar(&c.parallel, "parallel", status.DefaultParallel, "how many clusters are queried at once")
	pf.StringVarP(&c.output, "output", "o", status.FormatTable, "output format: table, json or yaml")
	pf.StringVarP(&c.namespace, "namespace", "n", "", "namespace of the Workloads (default: the contexts' namespace)")
	pf.BoolVarP(&c.allNamespaces, "all-namespaces", "A", false, "list Workloads in all namespaces")
	pf.DurationVar(&c.wait, "wait", 0, "re-read the fleet until every cluster is read, agrees and is ready (exit 0), for at most this long; "+
		"--wait alone waits "+status.DefaultWait.String()+" (give another as --wait=2m)")
	pf.Lookup("wait").NoOptDefVal = status.DefaultWait.String()
	pf.BoolVarP(&c.watch, "watch", "w", false, "print the report again whenever it changes (from API watches), until Ctrl-C; exits with the last report's code")

	root.AddCommand(c.viewCommand(status.ViewFederation, "The Federation roster and mesh checks as each cluster reports them, and which cluster is local per context"))
	root.AddCommand(c.viewCommand(status.ViewMembers, "The ClusterMembers each cluster holds, and which context each member is local to"))
	root.AddCommand(c.planCommand())
	root.AddCommand(c.eventsCommand())
	root.AddCommand(c.bundleCommand())
	root.AddCommand(c.versionCommand())
	return root
}

func (c *cli) viewCommand(view, short string) *cobra.Command {
	return &cobra.Command{
		Use:   view + " (--context NAME... | --contexts-file FILE | --all-contexts)",
		Short: short,
		Long: short + `.

JSON and YAML print the whole fleet report (the same document as without a view); the exit
code also describes the whole report.

` + exitCodesHelp,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			return c.runFleet(cmd.Context(), nil, view)
		},
	}
}

func (c *cli) runFleet(ctx context.Context, names []string, view string) error {
	if err := status.ValidateFormat(c.output); err != nil {
		return err
	}
	if c.timeout <= 0 {
		return status.Usagef("--timeout must be positive, got %s", c.timeout)
	}
	if c.parallel <= 0 {
		return status.Usagef("--parallel must be at least 1, got %d", c.parallel)
	}
	if c.namespace != "" && c.allNamespaces {
		return status.Usagef("--namespace and --all-namespaces exclude each other: pick one")
	}
	if c.wait < 0 {
		return status.Usagef("--wait must be positive, got %s", c.wait)
	}
	if c.wait > 0 && c.watch {
		return status.Usagef("--wait and --watch exclude each other: --wait ends once the fleet is ready, --watch runs until Ctrl-C")
	}
	if c.wait > 0 {
		// --wait takes its value only after '=': "--wait 2m" waits the default and filters
		// Workloads by the name "2m", which is never what was meant.
		for _, n := range names {
			if _, err := time.ParseDuration(n); err == nil {
				return status.Usagef("%q was read as a Workload name; to wait that long write --wait=%s", n, n)
			}
		}
	}
	targets, err := status.ResolveTargets(status.ContextSelection{
		Kubeconfig: c.kubeconfig, Contexts: c.contexts, ContextsFile: c.contextsFile, All: c.allContexts,
	})
	if err != nil {
		return err
	}
	// Without its own path the plugins run as client-go starts them: abandoned, not ended.
	if self, err := os.Executable(); err == nil {
		status.GuardExecPlugins(targets, self)
	}
	q := status.Query{Namespace: c.namespace, Names: names, Timeout: c.timeout, Parallel: c.parallel}
	if c.namespace == "" && !c.allNamespaces {
		if q.Namespace, err = status.DefaultNamespace(targets); err != nil {
			return err
		}
	}
	for _, p := range names {
		if _, err := filepath.Match(p, ""); err != nil {
			return status.Usagef("workload pattern %q is malformed: %v", p, err)
		}
	}
	read := func(ctx context.Context) status.Report { return status.Read(ctx, targets, q, nil) }
	var report status.Report
	if c.watch {
		return c.watchFleet(ctx, targets, q, read, view)
	}
	if c.wait > 0 {
		if report, err = status.Wait(ctx, read, status.WaitOptions{Timeout: c.wait, Progress: c.stderr}); err != nil {
			return fmt.Errorf("interrupted while waiting: %w", err)
		}
		if code := report.Summary.ExitCode; code != status.ExitOK {
			fmt.Fprintf(c.stderr, "polykube-status: gave up waiting after %s: %s (exit %d)\n", c.wait, status.ExitMeaning(code), code)
		}
	} else {
		report = read(ctx)
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
	}
	if err := status.PrintReport(c.stdout, report, c.output, view, status.PrintOptions{Color: c.color}); err != nil {
		return err
	}
	c.exitCode = report.Summary.ExitCode
	return nil
}

func (c *cli) planCommand() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "plan (-f FILE_OR_DIR... [--cluster NAME] [--assume-down NAME...] | --diff OLD NEW)",
		Short: "Preview the allocation of Workload manifests, without any cluster access",
		Long: `Reads Workload manifests (multi-document YAML; directories recursively; other kinds are
ignored) and computes each Workload's allocation with the same function the operators run.
With --diff OLD NEW (two files or directories, for example two git checkouts) it shows which
replicas move per workload per cluster.

With --cluster NAME it shows that cluster's replicas and the Deployment its operator renders:
the overrides that select it (from its ClusterMember in the paths read: give the roster's
manifests too), the effective images, and with -o yaml or -o json the Deployment object and,
for a Workload with ports, the Service beside it.

With --assume-down NAME (repeatable) it previews capacity failover as if those clusters ran
none of their share: each survivor's replicas as BASE+EXTRA, each capped by the Workload's
distribution.failover.maxSurge; a Workload without failover just loses that share.

With --kustomize (-k) every path is a kustomization directory, rendered as Flux's
kustomize-controller would before planning (without Flux's post-build variable substitution).
Like Flux, a kustomization may read files outside its directory and clone remote bases with
git: plan -k names on stderr every file it read outside the directory and every repository it
cloned, so run it on a checkout you trust or read that list.

Workloads without metadata.namespace are planned in --namespace (default "default"): the
allocation's tie-break depends on namespace/name, so set it to where Flux applies them.

Exit codes: 0 every Workload is valid; 2 usage error; 6 an invalid Workload (its file, document
number and the reason are printed); 1 internal error.`,
		Example: `  polykube-status plan -f gitops/workloads
  polykube-status plan -f billing.yaml --cluster beta -o json
  polykube-status plan -f gitops/workloads -f gitops/roster --cluster gamma -o yaml
  polykube-status plan -f gitops --assume-down gamma
  polykube-status plan --diff /tmp/main/gitops/workloads gitops/workloads
  polykube-status plan -k -f examples/aws-gcp/gitops/workloads/production`,
		Args: cobra.ArbitraryArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := status.ValidateFormat(c.output); err != nil {
				return err
			}
			if len(c.contexts) > 0 || c.contextsFile != "" || c.allContexts {
				return status.Usagef("plan reads manifests only and never contacts a cluster: drop --context, --contexts-file and --all-contexts")
			}
			opts := plan.LoadOptions{DefaultNamespace: c.namespace, Kustomize: c.planKustomize, Log: c.stderr}
			if c.allNamespaces {
				return status.Usagef("--all-namespaces has no meaning for plan: manifests carry their namespace, or get --namespace")
			}
			pr := status.PrintOptions{Color: c.color}
			if c.planDiff {
				if len(args) != 2 || len(c.planFiles) > 0 || c.planCluster != "" || len(c.planDown) > 0 {
					return status.Usagef("plan --diff takes exactly two paths, OLD and NEW, and no -f, --cluster or --assume-down: polykube-status plan --diff OLD NEW")
				}
				d, err := plan.Diff([]string{args[0]}, []string{args[1]}, opts)
				if err != nil {
					return err
				}
				c.exitCode = d.ExitCode
				return plan.PrintDiff(c.stdout, d, c.output, pr)
			}
			if len(args) > 0 {
				return status.Usagef("plan takes its manifests with -f (got %s); to compare two trees use plan --diff OLD NEW", strings.Join(args, " "))
			}
			if len(c.planFiles) == 0 {
				return status.Usagef("plan needs manifests: -f FILE_OR_DIR (repeatable), or --diff OLD NEW")
			}
			p, err := plan.PlanScoped(c.planFiles, plan.Scope{Cluster: c.planCluster, AssumeDown: c.planDown}, opts)
			if err != nil {
				return err
			}
			c.exitCode = p.ExitCode
			return plan.PrintPlan(c.stdout, p, c.output, pr)
		},
	}
	cmd.Flags().StringArrayVarP(&c.planFiles, "filename", "f", nil, "manifest file or directory (repeatable)")
	cmd.Flags().StringVar(&c.planCluster, "cluster", "", "show this cluster's replicas and the Deployment its operator renders")
	cmd.Flags().StringArrayVar(&c.planDown, "assume-down", nil, "preview failover as if this cluster were down (repeatable)")
	cmd.Flags().BoolVar(&c.planDiff, "diff", false, "compare the plans of two paths: plan --diff OLD NEW")
	cmd.Flags().BoolVarP(&c.planKustomize, "kustomize", "k", false, "treat every path as a kustomization directory and plan its `kustomize build` output")
	return cmd
}

// usageArgs turns cobra's argument errors into UsageErrors (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return status.Usagef("%v", err)
		}
		return nil
	}
}
