package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/topology"
)

// testbedCommands are the commands that bring up and control a test-bed federation. Each
// works on a testbed.Bed, whatever its provider: the same verbs, flags and messages for kwok,
// existing, kind and k0s.
func testbedCommands() []*cobra.Command {
	return []*cobra.Command{
		newUpCmd(), newDownCmd(), newStatusCmd(), newKubeconfigCmd(), newGitCmd(),
		newFaultCmd(), newOperatorCmd(), newLogsCmd(), newDemoCmd(), newSoakCmd(), newServeGitCmd(), newServeMeshMirrorCmd(), newServeOverlayAgentCmd(), newOverlayKeyCmd(),
	}
}

// runFlags select a run; every test-bed command takes them.
type runFlags struct {
	stateDir  string
	run       string
	sourceDir string
	provider  string
	dryRun    bool
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "directory holding the runs (default ${XDG_STATE_HOME:-~/.local/state}/polykube/testbed)")
	cmd.Flags().StringVar(&f.run, "run", "", "name of the run (default: the topology's name, polykube for the default topology)")
	cmd.Flags().StringVar(&f.sourceDir, "source-dir", "", "the Polykube checkout (default: the one containing the working directory)")
	cmd.Flags().StringVar(&f.provider, "provider", "", "kwok, existing, kind or k0s (default: the topology's provider; for a command on a run, the run's)")
}

// registerDryRun adds --dry-run, which the providers with real nodes (kind, k0s) honour.
func (f *runFlags) registerDryRun(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.dryRun, "dry-run", false, "print every action and external command instead of running them (kind and k0s)")
}

// bedOptions are the options of the bed the flags select, for a topology (nil: the run's).
func (f *runFlags) bedOptions(cmd *cobra.Command, top *topology.Topology) testbed.BedOptions {
	return testbed.BedOptions{
		Provider: f.provider, Topology: top, Run: f.run, StateRoot: f.stateDir, Log: cmd.ErrOrStderr(),
		SourceDir: f.sourceDir, SelfBinary: selfBinary(), DryRun: f.dryRun,
	}
}

// open opens the run a command acts on, saying how to create it when there is none. A dry
// run plans against the run's recorded state, or the default topology when there is none.
func (f *runFlags) open(cmd *cobra.Command) (testbed.Bed, error) {
	b, err := f.selectRun(cmd)
	if err != nil {
		return nil, err
	}
	if !b.Exists() && !f.dryRun {
		return nil, fmt.Errorf("no %s run %q is up in %s: run `%s` first", b.Topology().Provider, f.runName(b), f.root(), upCommand(b))
	}
	return b, nil
}

// selectRun opens the run the flags pick: --run and --provider when given; else the only
// recorded run that matches them; else, among several, the default topology's. With several
// runs and nothing to choose by, it asks for --run (and --provider).
func (f *runFlags) selectRun(cmd *cobra.Command) (testbed.Bed, error) {
	runs, err := testbed.RecordedRuns(f.stateDir)
	if err != nil {
		return nil, err
	}
	var match []testbed.RunRef
	for _, r := range runs {
		if (f.run == "" || r.Name == f.run) && (f.provider == "" || r.Provider == f.provider) {
			match = append(match, r)
		}
	}
	opts := f.bedOptions(cmd, nil)
	switch {
	case len(match) == 1:
		opts.Run, opts.Provider = match[0].Name, match[0].Provider
	case len(match) > 1:
		i := slices.IndexFunc(match, func(r testbed.RunRef) bool {
			return r.Name == topology.Default().Name && r.Provider == cmpOr(f.provider, topology.ProviderKwok)
		})
		if i < 0 {
			var names []string
			for _, r := range match {
				names = append(names, fmt.Sprintf("--run %s --provider %s", r.Name, r.Provider))
			}
			return nil, fmt.Errorf("several runs are up; pick one with %s", strings.Join(names, ", or "))
		}
		opts.Run, opts.Provider = match[i].Name, match[i].Provider
	}
	return testbed.OpenBed(opts)
}

func (f *runFlags) root() string {
	if f.stateDir != "" {
		return f.stateDir
	}
	root, _ := testbed.DefaultStateRoot()
	return root
}

func (f *runFlags) runName(b testbed.Bed) string {
	if f.run != "" {
		return f.run
	}
	return b.Topology().Name
}

// upCommand is the command that brings up a bed of b's provider.
func upCommand(b testbed.Bed) string {
	return "polykube-testbed up" + testbed.ProviderFlag(b.Topology())
}

// downCommand is the command that tears down run of b's provider.
func downCommand(b testbed.Bed, run string) string {
	cmd := "polykube-testbed down" + testbed.ProviderFlag(b.Topology())
	if run != "" && run != topology.Default().Name {
		cmd += " --run " + run
	}
	return cmd
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// selfBinary is this program when it is a lasting binary (not a `go run` temporary), so the
// Git server can run from it; "" lets the test bed build one.
func selfBinary() string {
	exe, err := os.Executable()
	if err != nil {
		return ""
	}
	if strings.Contains(exe, string(filepath.Separator)+"go-build") {
		return ""
	}
	return exe
}
