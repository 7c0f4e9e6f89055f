package host

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/proc"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Down stops the run's processes, deletes its clusters (the kwok provider; existing
// clusters are left as they are) and removes its state directory, then checks that nothing
// is left.
func (tb *Testbed) Down(ctx context.Context) error {
	var errs []error
	if err := tb.procs.StopAll(ctx, tb.wait(topology.WaitProcess)); err != nil {
		errs = append(errs, err)
	}
	if p, err := tb.Provider(); err == nil {
		names, _ := p.List(ctx)
		for _, n := range names {
			if err := p.Delete(ctx, n); err != nil {
				errs = append(errs, err)
			}
		}
	}
	// Whatever kwokctl could not delete (or when kwokctl is gone): kill by PID file.
	if err := killKwokPIDs(ctx, filepath.Join(tb.dir, "clusters"), tb.wait(topology.WaitProcess)); err != nil {
		errs = append(errs, err)
	}
	if err := Leftovers(tb.dir); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("down %s: %w (state kept in %s)", filepath.Base(tb.dir), errors.Join(errs...), tb.dir)
	}
	if err := os.RemoveAll(tb.dir); err != nil {
		return fmt.Errorf("remove %s: %w", tb.dir, err)
	}
	return nil
}

// DownAll takes down every run under the state root, including runs left half-made by
// earlier failures, and checks that no process or directory of theirs is left. A run of a
// registered kind (testbed.RegisterRunKind: the in-cluster bed's runs) is torn down by its
// own bed.
func DownAll(ctx context.Context, opts Options) ([]string, error) {
	root := opts.StateRoot
	if root == "" {
		var err error
		if root, err = testbed.DefaultStateRoot(); err != nil {
			return nil, err
		}
	}
	entries, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var runs []string
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if k, ok := testbed.RunKindOf(filepath.Join(root, e.Name())); ok {
			runs = append(runs, e.Name())
			log := opts.Log
			if log == nil {
				log = os.Stderr
			}
			if err := k.Down(ctx, filepath.Join(root, e.Name()), log); err != nil {
				errs = append(errs, fmt.Errorf("down %s: %w", e.Name(), err))
			}
			continue
		}
		o := opts
		o.StateRoot, o.Run, o.Topology = root, e.Name(), nil
		tb, err := Open(o)
		if err != nil {
			// Unreadable state: sweep what the directory records.
			tb = &Testbed{opts: o, dir: filepath.Join(root, e.Name()), log: os.Stderr,
				state: &State{Topology: topology.Default()}, procs: proc.Dir(filepath.Join(root, e.Name(), "procs"))}
		}
		runs = append(runs, e.Name())
		if err := tb.Down(ctx); err != nil {
			errs = append(errs, err)
		}
	}
	return runs, errors.Join(errs...)
}

// Leftovers reports processes of the run's directory that are still alive.
func Leftovers(dir string) error {
	var alive []string
	procs := proc.Dir(filepath.Join(dir, "procs"))
	for _, n := range procs.Names() {
		if pid, ok := procs.Running(n); ok {
			alive = append(alive, fmt.Sprintf("%s (PID %d)", n, pid))
		}
	}
	for _, pf := range kwokPIDFiles(filepath.Join(dir, "clusters")) {
		if pid := readPID(pf); pid > 0 && proc.Alive(pid) {
			alive = append(alive, fmt.Sprintf("%s (PID %d)", strings.TrimSuffix(filepath.Base(pf), ".pid"), pid))
		}
	}
	if len(alive) > 0 {
		return fmt.Errorf("still running: %s", strings.Join(alive, ", "))
	}
	return nil
}

// kwokPIDFiles lists the PID files kwokctl's binary runtime keeps per component.
func kwokPIDFiles(clustersDir string) []string {
	files, _ := filepath.Glob(filepath.Join(clustersDir, "*", "clusters", "*", "pids", "*.pid"))
	return files
}

func readPID(path string) int {
	data, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, _ := strconv.Atoi(strings.TrimSpace(string(data)))
	return pid
}

func killKwokPIDs(ctx context.Context, clustersDir string, w topology.Wait) error {
	var pids []int
	for _, pf := range kwokPIDFiles(clustersDir) {
		if pid := readPID(pf); pid > 0 && proc.Alive(pid) {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			pids = append(pids, pid)
		}
	}
	if len(pids) == 0 {
		return nil
	}
	return wait.For(ctx, w, fmt.Sprintf("%d kwok components to exit", len(pids)), func(context.Context) error {
		for _, pid := range pids {
			if proc.Alive(pid) {
				return fmt.Errorf("PID %d still alive", pid)
			}
		}
		return nil
	})
}

// PIDs lists the live processes of the run: add-on processes and cluster components.
func (tb *Testbed) PIDs() []int {
	var pids []int
	for _, n := range tb.procs.Names() {
		if pid, ok := tb.procs.Running(n); ok {
			pids = append(pids, pid)
		}
	}
	for _, pf := range kwokPIDFiles(filepath.Join(tb.dir, "clusters")) {
		if pid := readPID(pf); pid > 0 && proc.Alive(pid) {
			pids = append(pids, pid)
		}
	}
	return pids
}
