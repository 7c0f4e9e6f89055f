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

// testbedCommands are the commands that bring up and control a test-bed federation.
func testbedCommands() []*cobra.Command {
	return []*cobra.Command{
		newUpCmd(), newDownCmd(), newStatusCmd(), newKubeconfigCmd(), newGitCmd(),
		newFaultCmd(), newLogsCmd(), newDemoCmd(), newServeGitCmd(), newServeMeshMirrorCmd(),
	}
}

// runFlags select a run; every test-bed command takes them.
type runFlags struct {
	stateDir  string
	run       string
	sourceDir string
}

func (f *runFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.stateDir, "state-dir", "", "directory holding the runs (default ${XDG_STATE_HOME:-~/.local/state}/polykube/testbed)")
	cmd.Flags().StringVar(&f.run, "run", "", "name of the run (default: the topology's name, polykube for the default topology)")
	cmd.Flags().StringVar(&f.sourceDir, "source-dir", "", "the Polykube checkout (default: the one containing the working directory)")
}

func (f *runFlags) options(cmd *cobra.Command, top *topology.Topology) testbed.Options {
	return testbed.Options{StateRoot: f.stateDir, Run: f.run, SourceDir: f.sourceDir, Topology: top, Log: cmd.ErrOrStderr()}
}

// open opens an existing run, saying how to create it when there is none.
func (f *runFlags) open(cmd *cobra.Command) (*testbed.Testbed, error) {
	opts, err := f.selectRun(cmd)
	if err != nil {
		return nil, err
	}
	tb, err := testbed.Open(opts)
	if err != nil {
		return nil, err
	}
	if !tb.Exists() {
		return nil, fmt.Errorf("no test bed is up in %s: run `polykube-testbed up` first", tb.Dir())
	}
	return tb, nil
}

// selectRun picks the run: --run, else the only run there is, else the default topology's
// when it exists; with several runs and no --run it asks for one.
func (f *runFlags) selectRun(cmd *cobra.Command) (testbed.Options, error) {
	opts := f.options(cmd, nil)
	if opts.Run != "" {
		return opts, nil
	}
	runs, err := testbed.Runs(opts.StateRoot)
	if err != nil {
		return opts, err
	}
	switch {
	case len(runs) == 1:
		opts.Run = runs[0]
	case len(runs) > 1 && !slices.Contains(runs, topology.Default().Name):
		return opts, fmt.Errorf("several runs are up (%s): pick one with --run", strings.Join(runs, ", "))
	}
	return opts, nil
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
