// Package execx runs the external programs of the in-cluster bed (docker, cilium, flux,
// k0sctl) through one Runner, so that a real run and a dry run go through the same code:
// Exec runs each command with the test bed's shell package (its errors carry the whole
// command line and the tail of the output), DryRun prints each command instead and answers
// with canned output.
package execx

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/polykube/polykube/testbed/internal/shell"
)

// Cmd is a command line; see shell.Cmd.
type Cmd = shell.Cmd

// Command builds a Cmd.
func Command(path string, args ...string) Cmd { return Cmd{Path: path, Args: args} }

// Runner runs commands and returns their combined output.
type Runner interface {
	Run(ctx context.Context, c Cmd) ([]byte, error)
	// DryRun reports whether commands are only printed.
	DryRun() bool
	// Note records an action that is not an external command (an API call, a file written)
	// and reports whether to perform it: true for a real run, false for a dry run, which
	// prints the note instead.
	Note(format string, args ...any) bool
}

// Exec runs commands for real.
type Exec struct {
	// Log, when set, receives each command line before it runs.
	Log io.Writer
}

// Run implements Runner.
func (e Exec) Run(ctx context.Context, c Cmd) ([]byte, error) {
	if e.Log != nil {
		fmt.Fprintf(e.Log, "  $ %s\n", c.String())
	}
	return c.Run(ctx)
}

// DryRun implements Runner.
func (Exec) DryRun() bool { return false }

// Note implements Runner: the note goes to Log and the action is performed.
func (e Exec) Note(format string, args ...any) bool {
	if e.Log != nil {
		first, _, _ := strings.Cut(fmt.Sprintf(format, args...), "\n")
		fmt.Fprintf(e.Log, "  # %s\n", first)
	}
	return true
}

// DryRun prints every command and note instead of running it, and records the commands.
type DryRun struct {
	Out io.Writer
	// Answers are the outputs of commands, keyed by a prefix of the command line; the longest
	// matching prefix wins. A command with no answer outputs nothing and succeeds.
	Answers map[string]string

	mu   sync.Mutex
	cmds []Cmd
}

// Run implements Runner.
func (d *DryRun) Run(_ context.Context, c Cmd) ([]byte, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.cmds = append(d.cmds, c)
	fmt.Fprintf(d.Out, "  $ %s\n", c.String())
	line, best := c.String(), ""
	for prefix := range d.Answers {
		if strings.HasPrefix(line, prefix) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return nil, nil
	}
	return []byte(d.Answers[best]), nil
}

// DryRun implements Runner.
func (*DryRun) DryRun() bool { return true }

// Note implements Runner.
func (d *DryRun) Note(format string, args ...any) bool {
	d.mu.Lock()
	defer d.mu.Unlock()
	msg := fmt.Sprintf(format, args...)
	for i, line := range strings.Split(strings.TrimRight(msg, "\n"), "\n") {
		if i == 0 {
			fmt.Fprintf(d.Out, "  # %s\n", line)
		} else {
			fmt.Fprintf(d.Out, "  #   %s\n", line)
		}
	}
	return false
}

// Commands returns the commands run so far.
func (d *DryRun) Commands() []Cmd {
	d.mu.Lock()
	defer d.mu.Unlock()
	return append([]Cmd(nil), d.cmds...)
}
