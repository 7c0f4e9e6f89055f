// Package shell runs the external commands of the test bed; its errors carry the whole
// command line and the tail of its output, so a failure says what was run and what it said.
package shell

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
)

// Cmd is a command to run.
type Cmd struct {
	Path string
	Args []string
	// Env is added to the current environment.
	Env []string
	Dir string
}

// Error is a failed command.
type Error struct {
	Cmd    string
	Err    error
	Output string
}

func (e *Error) Error() string {
	return fmt.Sprintf("%s: %v\n%s", e.Cmd, e.Err, tail(e.Output, 20))
}

func (e *Error) Unwrap() error { return e.Err }

// Run runs the command and returns its combined output.
func (c Cmd) Run(ctx context.Context) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Dir = c.Dir
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.Bytes(), &Error{Cmd: c.String(), Err: err, Output: out.String()}
	}
	return out.Bytes(), nil
}

// Output runs the command and returns what it wrote to stdout alone; stderr goes only into the
// error. Use it when the output is parsed: `go list`, for one, writes "go: downloading …" lines
// to stderr on a cold module cache, which Run would mix into the result.
func (c Cmd) Output(ctx context.Context) ([]byte, error) {
	cmd := exec.CommandContext(ctx, c.Path, c.Args...)
	cmd.Env = append(os.Environ(), c.Env...)
	cmd.Dir = c.Dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.Bytes(), &Error{Cmd: c.String(), Err: err, Output: stderr.String() + stdout.String()}
	}
	return stdout.Bytes(), nil
}

// String is the command line, with its extra environment first.
func (c Cmd) String() string {
	parts := append([]string{}, c.Env...)
	parts = append(parts, c.Path)
	for _, a := range c.Args {
		if strings.ContainsAny(a, " \t\"'") {
			a = fmt.Sprintf("%q", a)
		}
		parts = append(parts, a)
	}
	return strings.Join(parts, " ")
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
