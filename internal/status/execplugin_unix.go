//go:build unix

package status

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/term"
)

const execShimSupported = true

// shimParentPoll is how often the shim checks that polykube-status still runs. Nothing tells a
// child portably that its parent died; the check costs a getppid call.
const shimParentPoll = 50 * time.Millisecond

// runExecShim runs command with args and env, and ends it (its whole process group) when the
// process parent is no longer this shim's parent or when the shim is interrupted.
func runExecShim(command string, args, env []string, parent int) int {
	cmd := exec.Command(command, args...)
	cmd.Env = env
	cmd.Stdin = os.Stdin
	cmd.Stdout = os.Stdout
	// Not os.Stderr itself: os/exec gives the plugin a pipe and copies it here, so the caller's
	// stderr is held by the shim only, which ends with the run.
	cmd.Stderr = struct{ io.Writer }{os.Stderr}
	// A plugin's child that keeps the pipe open must not hold the shim after the plugin exits.
	cmd.WaitDelay = 200 * time.Millisecond
	// A process group of its own, so that ending the plugin ends what it started too. Not when
	// the plugin may prompt on the terminal (client-go gave it the terminal as stdin): outside
	// the terminal's foreground group a read would stop it (SIGTTIN).
	interactive := term.IsTerminal(int(os.Stdin.Fd()))
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: !interactive}

	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "polykube-status: start the exec credential plugin %q: %v\n", command, err)
		if errors.Is(err, exec.ErrNotFound) {
			return 127
		}
		return 126
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	end := func() {
		if interactive {
			_ = cmd.Process.Kill()
		} else {
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		}
		<-exited
	}
	tick := time.NewTicker(shimParentPoll)
	defer tick.Stop()
	for {
		select {
		case <-exited:
			// The plugin's own exit code, also when a child it left behind still held its stderr
			// (exec.ErrWaitDelay): client-go judges the plugin, not its children.
			if ps := cmd.ProcessState; ps != nil && ps.ExitCode() >= 0 {
				return ps.ExitCode()
			}
			return 1
		case <-signals:
			end()
			return 130
		case <-tick.C:
			if os.Getppid() != parent {
				end()
				return 1
			}
		}
	}
}
