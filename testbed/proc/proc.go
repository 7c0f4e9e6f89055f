// Package proc runs the test bed's long-lived processes (Git server, Flux controllers,
// operators) detached from the command that starts them, and finds them again later.
//
// Each process has a name and three files in a directory: <name>.json (how to start it, so
// a later command can restart it), <name>.pid (its PID and start time, so a recycled PID
// is never mistaken for it) and <name>.log (its output, appended across restarts).
package proc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Spec says how to start a process.
type Spec struct {
	Name string   `json:"name"`
	Path string   `json:"path"`
	Args []string `json:"args,omitempty"`
	// Env is added to a minimal environment (PATH, HOME, TMPDIR).
	Env []string `json:"env,omitempty"`
	Dir string   `json:"dir,omitempty"`
	// HealthURL, when set, answers 200 when the process is ready.
	HealthURL string `json:"healthURL,omitempty"`
}

// Dir holds the process files of one test-bed run.
type Dir string

func (d Dir) specPath(name string) string { return filepath.Join(string(d), name+".json") }
func (d Dir) pidPath(name string) string  { return filepath.Join(string(d), name+".pid") }

// LogPath is where the output of the named process goes.
func (d Dir) LogPath(name string) string { return filepath.Join(string(d), name+".log") }

// pidRecord identifies a running process.
type pidRecord struct {
	PID int `json:"pid"`
	// StartTicks is field 22 of /proc/PID/stat: it tells this process from a later one that
	// got the same PID.
	StartTicks uint64 `json:"startTicks"`
}

// Start writes the spec and starts the process in its own session, its output appended to
// its log. An already running process of that name is left alone.
func (d Dir) Start(spec Spec) (int, error) {
	if pid, ok := d.Running(spec.Name); ok {
		return pid, nil
	}
	if err := os.MkdirAll(string(d), 0o755); err != nil {
		return 0, err
	}
	data, err := json.MarshalIndent(spec, "", "  ")
	if err != nil {
		return 0, err
	}
	if err := os.WriteFile(d.specPath(spec.Name), data, 0o600); err != nil {
		return 0, fmt.Errorf("record process %s: %w", spec.Name, err)
	}
	return d.start(spec)
}

// Restart starts the named process again from its recorded spec, unless it is running.
func (d Dir) Restart(name string) (int, error) {
	if pid, ok := d.Running(name); ok {
		return pid, nil
	}
	spec, err := d.Spec(name)
	if err != nil {
		return 0, err
	}
	return d.start(spec)
}

// Spec reads the recorded spec of the named process.
func (d Dir) Spec(name string) (Spec, error) {
	var spec Spec
	data, err := os.ReadFile(d.specPath(name))
	if err != nil {
		return spec, fmt.Errorf("process %s was never started in %s: %w", name, d, err)
	}
	return spec, json.Unmarshal(data, &spec)
}

func (d Dir) start(spec Spec) (int, error) {
	logf, err := os.OpenFile(d.LogPath(spec.Name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return 0, err
	}
	defer logf.Close()
	fmt.Fprintf(logf, "\n=== %s start %s %s\n", time.Now().Format(time.RFC3339), spec.Path, strings.Join(spec.Args, " "))
	cmd := exec.Command(spec.Path, spec.Args...)
	cmd.Dir = spec.Dir
	cmd.Env = append(baseEnv(), spec.Env...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		return 0, fmt.Errorf("start %s (%s): %w", spec.Name, spec.Path, err)
	}
	// Reap it if it exits while we live, so it does not linger as a zombie that looks alive.
	go func() { _ = cmd.Wait() }()
	rec := pidRecord{PID: cmd.Process.Pid, StartTicks: startTicks(cmd.Process.Pid)}
	data, _ := json.Marshal(rec)
	if err := os.WriteFile(d.pidPath(spec.Name), data, 0o644); err != nil {
		_ = cmd.Process.Kill()
		return 0, fmt.Errorf("record PID of %s: %w", spec.Name, err)
	}
	return rec.PID, nil
}

func baseEnv() []string {
	var env []string
	for _, k := range []string{"PATH", "HOME", "TMPDIR", "GOCACHE", "GOPATH", "GOFLAGS"} {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return env
}

// Running returns the PID of the named process if it is alive.
func (d Dir) Running(name string) (int, bool) {
	data, err := os.ReadFile(d.pidPath(name))
	if err != nil {
		return 0, false
	}
	var rec pidRecord
	if json.Unmarshal(data, &rec) != nil || rec.PID <= 0 {
		return 0, false
	}
	return rec.PID, alive(rec)
}

// Alive reports whether pid is a live process (not a zombie), whoever started it.
func Alive(pid int) bool { return alive(pidRecord{PID: pid}) }

func alive(rec pidRecord) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", rec.PID))
	if err != nil {
		return false
	}
	fields := statFields(string(stat))
	if len(fields) < 20 || fields[0] == "Z" || fields[0] == "X" {
		return false
	}
	st, _ := strconv.ParseUint(fields[19], 10, 64)
	return rec.StartTicks == 0 || st == rec.StartTicks
}

// statFields returns the fields of /proc/PID/stat after the command name, starting at state.
func statFields(stat string) []string {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return nil
	}
	return strings.Fields(stat[i+1:])
}

func startTicks(pid int) uint64 {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	f := statFields(string(stat))
	if len(f) < 20 {
		return 0
	}
	v, _ := strconv.ParseUint(f[19], 10, 64)
	return v
}

// Stop signals the named process (SIGTERM, or SIGKILL when kill is set; its whole session,
// so children go too) and waits until it is gone, escalating to SIGKILL at half the timeout.
func (d Dir) Stop(ctx context.Context, name string, kill bool, w topology.Wait) error {
	pid, ok := d.Running(name)
	if !ok {
		return nil
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-pid, sig)
	_ = syscall.Kill(pid, sig)
	start := time.Now()
	return wait.For(ctx, w, fmt.Sprintf("process %s (PID %d) to exit", name, pid), func(context.Context) error {
		if _, ok := d.Running(name); !ok {
			return nil
		}
		if time.Since(start) > w.Timeout.Duration/2 {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		return errors.New("still running")
	})
}

// Names lists the processes recorded in the directory.
func (d Dir) Names() []string {
	files, _ := filepath.Glob(filepath.Join(string(d), "*.json"))
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimSuffix(filepath.Base(f), ".json"))
	}
	sort.Strings(names)
	return names
}

// StopAll stops every recorded process and reports the ones that would not stop.
func (d Dir) StopAll(ctx context.Context, w topology.Wait) error {
	var errs []error
	for _, n := range d.Names() {
		if err := d.Stop(ctx, n, false, w); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// LogTail returns at most n trailing lines of the named process's log ("" when it has none).
func (d Dir) LogTail(name string, n int) string {
	data, _ := os.ReadFile(d.LogPath(name))
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// AwaitHealthy waits until the named process's spec HealthURL answers 200 (what says what is
// awaited, for the timeout's message). A process that exits meanwhile ends the wait at once,
// with the last lines of its log: waiting out the timeout would only hide why.
func (d Dir) AwaitHealthy(ctx context.Context, name, what string, w topology.Wait) error {
	spec, err := d.Spec(name)
	if err != nil {
		return err
	}
	if spec.HealthURL == "" {
		return fmt.Errorf("process %s has no health URL to wait on", name)
	}
	return wait.For(ctx, w, what, func(ctx context.Context) error {
		if _, ok := d.Running(name); !ok {
			return wait.Stop(fmt.Errorf("%s exited; its log %s says:\n%s", name, d.LogPath(name), d.LogTail(name, 15)))
		}
		return wait.HTTPOK(spec.HealthURL)(ctx)
	})
}
