package datapath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/util/version"

	"github.com/polykube/polykube/testbed/internal/execx"
)

// Host is what preflight looks at; tests replace each part.
type Host struct {
	// Runner runs `docker info` and the CLIs' version commands.
	Runner execx.Runner
	// LookPath finds a program on $PATH (exec.LookPath).
	LookPath func(file string) (string, error)
	// ReadFile reads /proc/meminfo and the inotify sysctls (os.ReadFile).
	ReadFile func(name string) ([]byte, error)
}

// LocalHost is this machine.
func LocalHost(r execx.Runner) Host {
	return Host{Runner: r, LookPath: exec.LookPath, ReadFile: os.ReadFile}
}

// Requirements say what an in-cluster run needs of the host.
type Requirements struct {
	// Docker: the provider runs its nodes as Docker containers.
	Docker bool
	// Clusters is how many clusters will run on this host (0: no memory or inotify check).
	Clusters int
	// Tools are the CLIs the run drives.
	Tools []Tool
}

// MemoryPerCluster is about what one single-node kind or k0s cluster with Cilium, Flux and the
// operator needs.
const MemoryPerCluster = 2 << 30

// The inotify limits kind documents as needed for several clusters on one host (the defaults
// of 8192 watches and 128 instances make kubelets fail with "too many open files").
const (
	MinInotifyWatches   = 524288
	MinInotifyInstances = 512
)

// Status is the outcome of one check.
type Status string

const (
	StatusOK   Status = "ok"
	StatusWarn Status = "warn" // could not be checked; the run goes on
	StatusFail Status = "fail"
)

// Check is one preflight check's outcome.
type Check struct {
	Name    string
	Status  Status
	Message string
}

// PreflightReport is every check's outcome, in order.
type PreflightReport []Check

// Err is nil when no check failed; otherwise it lists every failed check's message.
func (r PreflightReport) Err() error {
	var errs []error
	for _, c := range r {
		if c.Status == StatusFail {
			errs = append(errs, errors.New(c.Message))
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("preflight: this host cannot run the in-cluster bed's clusters yet:\n%w", errors.Join(errs...))
}

// Print writes one status line per check.
func (r PreflightReport) Print(w io.Writer) {
	for _, c := range r {
		mark := map[Status]string{StatusOK: "✓", StatusWarn: "!", StatusFail: "✗"}[c.Status]
		fmt.Fprintf(w, " %s %s: %s\n", mark, c.Name, c.Message)
	}
}

// Preflight checks the host against the requirements. It only reads: nothing is changed.
func Preflight(ctx context.Context, h Host, req Requirements) PreflightReport {
	var r PreflightReport
	if req.Docker {
		r = append(r, checkDocker(ctx, h))
	}
	if req.Clusters > 0 {
		r = append(r, checkMemory(h, req.Clusters))
		if req.Docker {
			r = append(r, checkInotify(h)...)
		}
	}
	for _, t := range req.Tools {
		r = append(r, checkTool(ctx, h, t))
	}
	return r
}

func checkDocker(ctx context.Context, h Host) Check {
	c := Check{Name: "docker"}
	if _, err := h.LookPath("docker"); err != nil {
		c.Status, c.Message = StatusFail, "docker is not on $PATH; install Docker Engine (https://docs.docker.com/engine/install/) and start it"
		return c
	}
	out, err := h.Runner.Run(ctx, execx.Command("docker", "info", "--format", "{{.ServerVersion}}"))
	server := strings.TrimSpace(string(out))
	if err != nil || server == "" {
		c.Status = StatusFail
		c.Message = fmt.Sprintf("the Docker daemon is not reachable (%s); start Docker, or give this user access to its socket (e.g. add it to the docker group), then try again",
			firstLine(err, out))
		return c
	}
	c.Status, c.Message = StatusOK, "Docker "+server+" is reachable"
	return c
}

func checkMemory(h Host, clusters int) Check {
	c := Check{Name: "memory"}
	need := int64(clusters) * MemoryPerCluster
	data, err := h.ReadFile("/proc/meminfo")
	avail, ok := int64(0), false
	if err == nil {
		avail, ok = memAvailable(string(data))
	}
	switch {
	case !ok:
		c.Status = StatusWarn
		c.Message = fmt.Sprintf("could not read MemAvailable from /proc/meminfo; not checked (%d clusters need about %s; on Docker Desktop give its VM at least that)",
			clusters, gib(need))
	case avail < need:
		c.Status = StatusFail
		c.Message = fmt.Sprintf("%s of memory is available but %d clusters need about %s; stop other workloads or use a topology with fewer clusters",
			gib(avail), clusters, gib(need))
	default:
		c.Status, c.Message = StatusOK, fmt.Sprintf("%s available, %d clusters need about %s", gib(avail), clusters, gib(need))
	}
	return c
}

func memAvailable(meminfo string) (int64, bool) {
	for _, line := range strings.Split(meminfo, "\n") {
		f := strings.Fields(line)
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseInt(f[1], 10, 64)
			return kb << 10, err == nil
		}
	}
	return 0, false
}

func checkInotify(h Host) []Check {
	var out []Check
	for _, s := range []struct {
		key string
		min int64
	}{{"fs.inotify.max_user_watches", MinInotifyWatches}, {"fs.inotify.max_user_instances", MinInotifyInstances}} {
		c := Check{Name: s.key}
		path := "/proc/sys/" + strings.ReplaceAll(s.key, ".", "/")
		data, err := h.ReadFile(path)
		v, perr := strconv.ParseInt(strings.TrimSpace(string(data)), 10, 64)
		switch {
		case err != nil || perr != nil:
			c.Status, c.Message = StatusWarn, fmt.Sprintf("could not read %s; not checked (kind needs at least %d)", path, s.min)
		case v < s.min:
			c.Status = StatusFail
			c.Message = fmt.Sprintf("%s is %d; several kind clusters on one host need at least %d (kind known issue: pods fail with \"too many open files\"); run: sudo sysctl -w %s=%d",
				s.key, v, s.min, s.key, s.min)
		default:
			c.Status, c.Message = StatusOK, fmt.Sprintf("%d (at least %d)", v, s.min)
		}
		out = append(out, c)
	}
	return out
}

func checkTool(ctx context.Context, h Host, t Tool) Check {
	c := Check{Name: t.Name}
	path, err := h.LookPath(t.Name)
	if err != nil {
		c.Status = StatusFail
		c.Message = fmt.Sprintf("%s is not on $PATH; install %s %s: %s", t.Name, t.Name, t.Pinned, t.Install)
		return c
	}
	out, err := h.Runner.Run(ctx, execx.Command(path, t.VersionArgs...))
	m := t.versionRE.FindStringSubmatch(string(out))
	if err != nil || m == nil {
		c.Status = StatusFail
		c.Message = fmt.Sprintf("could not tell the version of %s (`%s %s`: %s); install %s %s: %s",
			path, t.Name, strings.Join(t.VersionArgs, " "), firstLine(err, out), t.Name, t.Pinned, t.Install)
		return c
	}
	have := version.MustParseGeneric(m[1])
	if !have.AtLeast(version.MustParseGeneric(t.Minimum)) {
		c.Status = StatusFail
		c.Message = fmt.Sprintf("%s is version v%s, older than the oldest supported %s; install %s: %s",
			path, m[1], t.Minimum, t.Pinned, t.Install)
		return c
	}
	c.Status, c.Message = StatusOK, fmt.Sprintf("v%s at %s (tested with %s)", m[1], path, t.Pinned)
	return c
}

func firstLine(err error, out []byte) string {
	s := strings.TrimSpace(string(out))
	if err != nil {
		s = err.Error()
	}
	first, _, _ := strings.Cut(s, "\n")
	if first == "" {
		first = "no output"
	}
	return first
}

func gib(b int64) string { return fmt.Sprintf("%.1f GiB", float64(b)/(1<<30)) }

// capabilityBits are the capabilities the test bed asks for by name (Cilium's chart), with
// their numbers in the kernel's capability sets (linux/capability.h).
var capabilityBits = map[string]uint{
	"CHOWN": 0, "DAC_OVERRIDE": 1, "FOWNER": 3, "KILL": 5, "SETGID": 6, "SETUID": 7, "NET_ADMIN": 12,
	"NET_RAW": 13, "IPC_LOCK": 14, "SYS_MODULE": 16, "SYS_CHROOT": 18, "SYS_PTRACE": 19, "SYS_ADMIN": 21,
	"SYS_RESOURCE": 24, "SYSLOG": 34,
}

// MissingCapabilities are the capabilities of capabilityBits that this process's bounding set
// (CapBnd in /proc/self/status) lacks: containers on this host cannot have them, privileged or
// not. On most machines none; on this project's CI VMs, SYS_RESOURCE.
func MissingCapabilities() []string {
	data, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return nil
	}
	return missingCapabilities(string(data))
}

func missingCapabilities(status string) []string {
	for _, line := range strings.Split(status, "\n") {
		hex, ok := strings.CutPrefix(line, "CapBnd:")
		if !ok {
			continue
		}
		bnd, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
		if err != nil {
			return nil
		}
		var out []string
		for name, bit := range capabilityBits {
			if bnd&(1<<bit) == 0 {
				out = append(out, name)
			}
		}
		slices.Sort(out)
		return out
	}
	return nil
}
