package datapath

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/internal/execx"
)

// fakeRunner answers commands by their full command line.
type fakeRunner struct {
	out  map[string]string
	fail map[string]error
}

func (f fakeRunner) Run(_ context.Context, c execx.Cmd) ([]byte, error) {
	line := c.String()
	if err, ok := f.fail[line]; ok {
		return []byte(f.out[line]), err
	}
	out, ok := f.out[line]
	if !ok {
		return nil, errors.New("unexpected command " + line)
	}
	return []byte(out), nil
}
func (fakeRunner) DryRun() bool             { return false }
func (fakeRunner) Note(string, ...any) bool { return true }

func healthyHost() (Host, fakeRunner) {
	r := fakeRunner{out: map[string]string{
		"docker info --format {{.ServerVersion}}": "28.1.1\n",
		"/usr/bin/flux version --client":          "flux: v2.9.5\n",
		"/usr/bin/k0sctl version":                 "version: v0.32.2\ncommit: 1a2b3c4\n",
	}, fail: map[string]error{}}
	files := map[string]string{
		"/proc/meminfo":                           "MemTotal:       16384000 kB\nMemAvailable:   12582912 kB\n",
		"/proc/sys/fs/inotify/max_user_watches":   "524288\n",
		"/proc/sys/fs/inotify/max_user_instances": "512\n",
	}
	return Host{
		Runner:   r,
		LookPath: func(f string) (string, error) { return "/usr/bin/" + f, nil },
		ReadFile: func(name string) ([]byte, error) {
			if s, ok := files[name]; ok {
				return []byte(s), nil
			}
			return nil, fs.ErrNotExist
		},
	}, r
}

var allTools = []Tool{FluxCLI, K0sctlCLI}

func TestPreflight_HealthyHostPasses(t *testing.T) {
	g := NewWithT(t)
	h, _ := healthyHost()
	r := Preflight(context.Background(), h, Requirements{Docker: true, Clusters: 3, Tools: allTools})
	g.Expect(r.Err()).NotTo(HaveOccurred())
	var out bytes.Buffer
	r.Print(&out)
	g.Expect(out.String()).To(Equal(` ✓ docker: Docker 28.1.1 is reachable
 ✓ memory: 12.0 GiB available, 3 clusters need about 6.0 GiB
 ✓ fs.inotify.max_user_watches: 524288 (at least 524288)
 ✓ fs.inotify.max_user_instances: 512 (at least 512)
 ✓ flux: v2.9.5 at /usr/bin/flux (tested with v2.9.5)
 ✓ k0sctl: v0.32.2 at /usr/bin/k0sctl (tested with v0.32.2)
`))
}

func TestPreflight_Messages(t *testing.T) {
	tests := []struct {
		name      string
		breakHost func(h *Host, r fakeRunner)
		req       Requirements
		check     string
		want      Status
		says      []string
	}{
		{
			name: "docker missing from PATH",
			breakHost: func(h *Host, _ fakeRunner) {
				h.LookPath = func(f string) (string, error) {
					if f == "docker" {
						return "", errors.New("not found")
					}
					return "/usr/bin/" + f, nil
				}
			},
			req: Requirements{Docker: true}, check: "docker", want: StatusFail,
			says: []string{"docker is not on $PATH", "install Docker Engine"},
		},
		{
			name: "docker daemon down",
			breakHost: func(_ *Host, r fakeRunner) {
				r.fail["docker info --format {{.ServerVersion}}"] = errors.New("exit status 1")
				r.out["docker info --format {{.ServerVersion}}"] = "Cannot connect to the Docker daemon at unix:///var/run/docker.sock"
			},
			req: Requirements{Docker: true}, check: "docker", want: StatusFail,
			says: []string{"Docker daemon is not reachable", "exit status 1", "start Docker", "docker group"},
		},
		{
			name: "too little memory",
			breakHost: func(h *Host, _ fakeRunner) {
				read := h.ReadFile
				h.ReadFile = func(n string) ([]byte, error) {
					if n == "/proc/meminfo" {
						return []byte("MemAvailable:    3145728 kB\n"), nil
					}
					return read(n)
				}
			},
			req: Requirements{Clusters: 3}, check: "memory", want: StatusFail,
			says: []string{"3.0 GiB of memory is available but 3 clusters need about 6.0 GiB", "fewer clusters"},
		},
		{
			name: "no /proc/meminfo (macOS)",
			breakHost: func(h *Host, _ fakeRunner) {
				h.ReadFile = func(string) ([]byte, error) { return nil, fs.ErrNotExist }
			},
			req: Requirements{Clusters: 2}, check: "memory", want: StatusWarn,
			says: []string{"not checked", "4.0 GiB"},
		},
		{
			name: "default inotify watches",
			breakHost: func(h *Host, _ fakeRunner) {
				read := h.ReadFile
				h.ReadFile = func(n string) ([]byte, error) {
					if n == "/proc/sys/fs/inotify/max_user_watches" {
						return []byte("8192\n"), nil
					}
					return read(n)
				}
			},
			req: Requirements{Docker: true, Clusters: 1}, check: "fs.inotify.max_user_watches", want: StatusFail,
			says: []string{"is 8192", "at least 524288", "sudo sysctl -w fs.inotify.max_user_watches=524288"},
		},
		{
			name: "default inotify instances",
			breakHost: func(h *Host, _ fakeRunner) {
				read := h.ReadFile
				h.ReadFile = func(n string) ([]byte, error) {
					if n == "/proc/sys/fs/inotify/max_user_instances" {
						return []byte("128"), nil
					}
					return read(n)
				}
			},
			req: Requirements{Docker: true, Clusters: 1}, check: "fs.inotify.max_user_instances", want: StatusFail,
			says: []string{"is 128", "sudo sysctl -w fs.inotify.max_user_instances=512"},
		},
		{
			name: "flux missing",
			breakHost: func(h *Host, _ fakeRunner) {
				h.LookPath = func(f string) (string, error) {
					if f == "flux" {
						return "", errors.New("not found")
					}
					return "/usr/bin/" + f, nil
				}
			},
			req: Requirements{Tools: allTools}, check: "flux", want: StatusFail,
			says: []string{"flux is not on $PATH", "install flux v2.9.5", "releases/download/v2.9.5/flux_2.9.5_linux_amd64.tar.gz"},
		},
		{
			name: "flux too old",
			breakHost: func(_ *Host, r fakeRunner) {
				r.out["/usr/bin/flux version --client"] = "flux: v2.1.2\n"
			},
			req: Requirements{Tools: allTools}, check: "flux", want: StatusFail,
			says: []string{"version v2.1.2, older than the oldest supported v2.2.0", "install v2.9.5", "flux_2.9.5_linux_amd64.tar.gz"},
		},
		{
			name: "k0sctl prints something unexpected",
			breakHost: func(_ *Host, r fakeRunner) {
				r.out["/usr/bin/k0sctl version"] = "k0sctl development build\n"
			},
			req: Requirements{Tools: allTools}, check: "k0sctl", want: StatusFail,
			says: []string{"could not tell the version of /usr/bin/k0sctl", "`k0sctl version`", "go install github.com/k0sproject/k0sctl@v0.32.2"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			h, r := healthyHost()
			tt.breakHost(&h, r)
			report := Preflight(context.Background(), h, tt.req)
			var got *Check
			for i := range report {
				if report[i].Name == tt.check {
					got = &report[i]
				}
			}
			g.Expect(got).NotTo(BeNil(), "check %s ran", tt.check)
			g.Expect(got.Status).To(Equal(tt.want))
			for _, s := range tt.says {
				g.Expect(got.Message).To(ContainSubstring(s))
			}
			for _, c := range report {
				if c.Name != tt.check {
					g.Expect(c.Status).To(Equal(StatusOK), "only %s is broken, but %s says %q", tt.check, c.Name, c.Message)
				}
			}
			if tt.want == StatusFail {
				g.Expect(report.Err()).To(MatchError(ContainSubstring(got.Message)))
			} else {
				g.Expect(report.Err()).NotTo(HaveOccurred())
			}
		})
	}
}
