package tier

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

const faultHelp = `

With --provider kind or k0s, on the datapath tier:

  apiserver CLUSTER   stops the cluster's nodes: on kind (and k0s in Docker) docker stop of its
                      node containers, so everything in the cluster stops, not only the API
                      server; on k0s hosts, sudo k0s stop over SSH. start starts them and
                      waits for the API server and then the operator
  operator CLUSTER    scales the operator Deployment to 0 with Flux told to leave it so and
                      kills its pods; start gives it its replicas back and hands it to Flux
  git                 the run's Git server

The flux fault is hermetic only. --dry-run prints what would be done.`

// extendFault makes `fault stop|start apiserver|operator|git [CLUSTER]` act on the datapath
// run when --provider is kind or k0s. The hermetic command's Args have already checked the
// action, the fault name and the cluster argument.
func extendFault(c *cobra.Command) {
	addProviderFlag(c)
	c.Flags().Bool("dry-run", false, "datapath tier: print every action and external command instead of running them")
	c.Long += faultHelp
	c.Example += "\n  polykube-testbed fault stop apiserver gcp-europe-west3 --provider kind\n  polykube-testbed fault start operator gcp-europe-west3 --provider kind"
	orig := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		prov := flagString(cmd, "provider")
		if !isDatapath(prov) {
			if flagBool(cmd, "dry-run") {
				return errors.New("--dry-run plans the datapath tier: add --provider kind or --provider k0s")
			}
			return orig(cmd, args)
		}
		if len(args) < 2 {
			return errors.New("use fault stop|start apiserver|operator|git [CLUSTER]")
		}
		action, fault, cluster := args[0], args[1], ""
		if len(args) == 3 {
			cluster = args[2]
		}
		run, err := faultFunc(action, fault, prov)
		if err != nil {
			return err
		}
		b, err := openRun(cmd, prov)
		if err != nil {
			return err
		}
		what := strings.TrimSpace(fmt.Sprintf("%s %s %s", action, fault, cluster))
		if err := b.env.Step(what, func() error { return run(cmd, b, cluster) }); err != nil {
			return err
		}
		if !b.opts.DryRun {
			fmt.Fprintf(cmd.OutOrStdout(), "%s: done\n", what)
		}
		return nil
	}
}

// faultFunc is the datapath tier's action for `fault ACTION FAULT` (Bed.Stop, Bed.Start).
func faultFunc(action, fault, prov string) (func(*cobra.Command, *Bed, string) error, error) {
	if action != "stop" && action != "start" {
		return nil, fmt.Errorf("unknown action %q: use stop or start", action)
	}
	f := testbed.Fault(fault)
	switch f {
	case testbed.FaultAPIServer, testbed.FaultOperator, testbed.FaultGit:
	default:
		return nil, unsupportedFault(f, prov)
	}
	if action == "stop" {
		return func(cmd *cobra.Command, b *Bed, c string) error { return b.Stop(cmd.Context(), f, c) }, nil
	}
	return func(cmd *cobra.Command, b *Bed, c string) error { return b.Start(cmd.Context(), f, c) }, nil
}

// extendGitCommit makes `git commit DIR` commit to the datapath run's Git server when
// --provider is kind or k0s, and ask every cluster's Flux to fetch it.
func extendGitCommit(c *cobra.Command) {
	addProviderFlag(c)
	c.Flags().Bool("dry-run", false, "datapath tier: print every action instead of running it")
	c.Long += `

With --provider kind or k0s, commits to the datapath run's Git server; as on the hermetic
tier, what was under workloads/<name>/ is replaced. --dry-run prints what would be done.`
	orig := c.RunE
	c.RunE = func(cmd *cobra.Command, args []string) error {
		prov := flagString(cmd, "provider")
		if !isDatapath(prov) {
			if flagBool(cmd, "dry-run") {
				return errors.New("--dry-run plans the datapath tier: add --provider kind or --provider k0s")
			}
			return orig(cmd, args)
		}
		if len(args) != 1 {
			return errors.New("use git commit DIR")
		}
		b, err := openRun(cmd, prov)
		if err != nil {
			return err
		}
		ctx, dir, name, msg := cmd.Context(), args[0], flagString(cmd, "name"), flagString(cmd, "message")
		if name == "" {
			abs, err := filepath.Abs(dir)
			if err != nil {
				return err
			}
			name = filepath.Base(abs)
		}
		if msg == "" {
			msg = "workloads: update " + name
		}
		rev, err := b.CommitDir(ctx, dir, name, msg)
		if err != nil {
			return err
		}
		if err := b.Fetch(ctx); err != nil {
			fmt.Fprintf(cmd.ErrOrStderr(), "warning: %v; those clusters' Flux fetches at its interval\n", err)
		}
		if !b.opts.DryRun {
			fmt.Fprintln(cmd.OutOrStdout(), rev)
		}
		if flagBool(cmd, "wait") {
			return datapath.WaitApplied(ctx, b.env, rev)
		}
		return nil
	}
}

// openRun opens the datapath run a command acts on. A dry run plans against the run's
// recorded state when there is one, else against the default topology with placeholders.
func openRun(cmd *cobra.Command, prov string) (*Bed, error) {
	opts, err := options(cmd, nil, prov)
	if err != nil {
		return nil, err
	}
	if !opts.DryRun {
		return Open(opts)
	}
	rec, err := recordedState(opts.Dir)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		opts.Topology, opts.K0sHosts = rec.Topology, rec.K0sHosts
	} else {
		opts.Topology = topology.Default()
	}
	b, err := Open(opts)
	if err != nil {
		return nil, err
	}
	if rec != nil {
		b.state.GitAddr, b.state.Seeded, b.state.Operator, b.state.ServiceAccount = rec.GitAddr, rec.Seeded, rec.Operator, rec.ServiceAccount
		return b, nil
	}
	// No run: the Git server's address is not known; the operator is the one Up would seed.
	b.state.GitAddr = "<git-server>"
	seed, err := datapath.Seed(b.state.Topology, gitrepo.SourcesIn(b.opts.SourceDir), datapath.Image)
	if err != nil {
		return nil, err
	}
	b.state.Operator, b.state.ServiceAccount = seed.Deployment, seed.ServiceAccount
	return b, nil
}

// recordedState reads the state a datapath run recorded in dir; nil when there is none.
func recordedState(dir string) (*State, error) {
	data, err := os.ReadFile(statePath(dir))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var st State
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, fmt.Errorf("read %s: %w", statePath(dir), err)
	}
	return &st, nil
}
