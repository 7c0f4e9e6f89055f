package toolchain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// Source says where a resolved binary came from.
type Source string

// The sources, in resolution order.
const (
	SourceOverride   Source = "override"
	SourcePath       Source = "path"
	SourceCache      Source = "cache"
	SourceBuilt      Source = "built"
	SourceDownloaded Source = "downloaded"
)

// Resolved is a binary ready to run.
type Resolved struct {
	Name    string `json:"name"`
	Version string `json:"version"`
	Path    string `json:"path"`
	Source  Source `json:"source"`
}

// Options configure a Toolchain. The zero value resolves without building.
type Options struct {
	// CacheDir holds built binaries; "" means DefaultCacheDir().
	CacheDir string
	// Overrides maps a tool name to a binary to use as is; it wins over the
	// POLYKUBE_<TOOL>_BINARY environment variables.
	Overrides map[string]string
	// Build gets tools that are not found: the upstream release, verified against its published
	// checksum, when upstream is reachable; otherwise a build from Go module source. Without it
	// a missing tool is an error wrapping ErrMissing.
	Build bool
	// Offline skips the upstream download and its reachability probe. POLYKUBE_OFFLINE=1 sets it too.
	Offline bool
	// Mirror, when set, is fetched instead of each release host: https://HOST/PATH becomes
	// MIRROR/HOST/PATH (an internal mirror of the release hosts; tests use a loopback server).
	// POLYKUBE_RELEASE_MIRROR sets it too.
	Mirror string
	// ProbeTimeout bounds the one reachability check per release host; default 2s.
	ProbeTimeout time.Duration
	// DownloadTimeout bounds one download with its checksum; default 10m.
	DownloadTimeout time.Duration
	// Log receives progress lines; nil means os.Stderr.
	Log io.Writer
}

// ErrMissing is wrapped by the error for a tool that is neither overridden, on $PATH at the
// pinned version, nor in the cache, when building is off.
var ErrMissing = errors.New("missing")

// ResolveError says why a tool could not be resolved and lists every place that was tried.
type ResolveError struct {
	Tool, Version string
	// Tried lists each place looked at and what was wrong with it.
	Tried []string
	// Hint says what to do about it.
	Hint string
	err  error
}

func (e *ResolveError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s: %v; tried:", e.Tool, e.Version, e.err)
	for _, t := range e.Tried {
		b.WriteString("\n  - " + strings.ReplaceAll(t, "\n", "\n    "))
	}
	if e.Hint != "" {
		b.WriteString("\n" + e.Hint)
	}
	return b.String()
}

func (e *ResolveError) Unwrap() error { return e.err }

// Toolchain resolves pinned tools. It is safe for use by one goroutine at a time; separate
// processes coordinate through file locks in the cache.
type Toolchain struct {
	opts Options
	// reachable remembers, per release host, whether it answered the probe.
	reachable map[string]error
	dir       string
	log       io.Writer
	tools     map[string]*Tool
	order     []string
}

// New returns a Toolchain for the pinned tools.
func New(opts Options) (*Toolchain, error) {
	return newToolchain(opts, pinnedTools())
}

func newToolchain(opts Options, tools []*Tool) (*Toolchain, error) {
	tc := &Toolchain{opts: opts, dir: opts.CacheDir, log: opts.Log, tools: map[string]*Tool{}}
	if tc.dir == "" {
		dir, err := DefaultCacheDir()
		if err != nil {
			return nil, err
		}
		tc.dir = dir
	}
	if abs, err := filepath.Abs(tc.dir); err == nil {
		tc.dir = abs
	}
	if tc.log == nil {
		tc.log = os.Stderr
	}
	if os.Getenv("POLYKUBE_OFFLINE") == "1" {
		tc.opts.Offline = true
	}
	if m := os.Getenv("POLYKUBE_RELEASE_MIRROR"); m != "" && tc.opts.Mirror == "" {
		tc.opts.Mirror = m
	}
	tc.reachable = map[string]error{}
	for _, t := range tools {
		tc.tools[t.Name] = t
		tc.order = append(tc.order, t.Name)
	}
	return tc, nil
}

// CacheDir is the cache directory in use.
func (tc *Toolchain) CacheDir() string { return tc.dir }

// Tool returns the definition of a tool, or nil.
func (tc *Toolchain) Tool(name string) *Tool { return tc.tools[name] }

// BinaryPath is where the cache keeps a tool's binary.
func (tc *Toolchain) BinaryPath(t *Tool) string {
	return filepath.Join(tc.dir, "bin", t.Name, t.Version, t.Name)
}

// group names a set of tools.
type group struct {
	name  string
	tools []string
}

// Groups returns the group names, e.g. "envtest", "kwok", "flux", "tofu", "all".
func Groups() []string {
	var names []string
	for _, g := range groups {
		names = append(names, g.name)
	}
	return names
}

// Expand turns tool and group names into tool names, in order, without duplicates. No
// names means "all". A name that is both a group and a tool (kwok, tofu) means the group.
func (tc *Toolchain) Expand(names ...string) ([]string, error) {
	if len(names) == 0 {
		names = []string{"all"}
	}
	var out []string
	add := func(n string) {
		if !slices.Contains(out, n) {
			out = append(out, n)
		}
	}
	for _, n := range names {
		if i := slices.IndexFunc(groups, func(g group) bool { return g.name == n }); i >= 0 {
			for _, t := range groups[i].tools {
				if _, ok := tc.tools[t]; ok {
					add(t)
				}
			}
			continue
		}
		if _, ok := tc.tools[n]; !ok {
			return nil, fmt.Errorf("unknown tool or group %q (tools: %s; groups: %s)",
				n, strings.Join(tc.order, ", "), strings.Join(Groups(), ", "))
		}
		add(n)
	}
	return out, nil
}

// ResolveAll resolves tools and groups in order (see Expand). It stops at the first error
// and returns what it resolved so far.
func (tc *Toolchain) ResolveAll(ctx context.Context, names ...string) ([]Resolved, error) {
	tools, err := tc.Expand(names...)
	if err != nil {
		return nil, err
	}
	var out []Resolved
	for _, n := range tools {
		r, err := tc.Resolve(ctx, n)
		if err != nil {
			return out, err
		}
		out = append(out, r)
	}
	return out, nil
}

// Resolve finds one tool: override, $PATH, cache, then (with Options.Build) a build from
// module source and an upstream download.
func (tc *Toolchain) Resolve(ctx context.Context, name string) (Resolved, error) {
	t := tc.tools[name]
	if t == nil {
		_, err := tc.Expand(name)
		return Resolved{}, err
	}
	if path, from := tc.override(t); path != "" {
		return tc.fromOverride(ctx, t, path, from)
	}

	var tried []string
	if r, why, ok := tc.fromPath(ctx, t); ok {
		return r, nil
	} else {
		tried = append(tried, why)
	}
	if r, why, ok := tc.fromCache(ctx, t); ok {
		return r, nil
	} else {
		tried = append(tried, why)
	}
	if !tc.opts.Build {
		return Resolved{}, &ResolveError{Tool: t.Name, Version: t.Version, Tried: tried, err: ErrMissing,
			Hint: fmt.Sprintf("Run `make tools` (or `polykube-testbed tools --build %s`) to build it from Go module source, or set %s to a binary.", t.Name, t.EnvVar())}
	}

	unlock, err := lockFile(ctx, filepath.Join(tc.dir, ".lock-"+t.Name), tc.log)
	if err != nil {
		return Resolved{}, err
	}
	defer unlock()
	// Another run may have built it while we waited for the lock.
	if r, _, ok := tc.fromCache(ctx, t); ok {
		return r, nil
	}

	// Online first: the release binary, verified against its published checksum, takes seconds
	// where a build from module source takes minutes. Offline, or when upstream publishes no
	// binary or no checksum, or when the download fails, the tool is built.
	if url, why := tc.downloadURL(ctx, t); url != "" {
		r, err := tc.downloadTool(ctx, t)
		if err == nil {
			return r, nil
		}
		tried = append(tried, fmt.Sprintf("download %s: %v", url, err))
		if ctx.Err() != nil {
			return Resolved{}, &ResolveError{Tool: t.Name, Version: t.Version, Tried: tried, err: context.Cause(ctx)}
		}
		fmt.Fprintf(tc.log, "  building %s from module source instead\n", t.Name)
	} else {
		tried = append(tried, why)
	}

	r, err := tc.buildTool(ctx, t)
	if err == nil {
		return r, nil
	}
	tried = append(tried, fmt.Sprintf("build from module source %s@%s: %v", t.Module, t.Version, err))
	if ctx.Err() != nil {
		return Resolved{}, &ResolveError{Tool: t.Name, Version: t.Version, Tried: tried, err: context.Cause(ctx)}
	}
	return Resolved{}, &ResolveError{Tool: t.Name, Version: t.Version, Tried: tried, err: errors.New("could not be downloaded or built"),
		Hint: fmt.Sprintf("Make the Go module proxy reachable (GOPROXY=%s) and rerun, or set %s to a %s %s binary.", goEnv("GOPROXY"), t.EnvVar(), t.Name, t.Version)}
}

// override returns the explicit binary for t, and where it was given.
func (tc *Toolchain) override(t *Tool) (path, from string) {
	if p := tc.opts.Overrides[t.Name]; p != "" {
		return p, "override"
	}
	if p := os.Getenv(t.EnvVar()); p != "" {
		return p, t.EnvVar()
	}
	return "", ""
}

// fromOverride accepts an explicit binary if it runs; a different version is only a warning,
// because the override is a deliberate choice.
func (tc *Toolchain) fromOverride(ctx context.Context, t *Tool, path, from string) (Resolved, error) {
	abs, err := exec.LookPath(path)
	if err == nil {
		abs, err = filepath.Abs(abs)
	}
	if err != nil {
		return Resolved{}, fmt.Errorf("%s=%s: %w (fix or unset it)", from, path, err)
	}
	v, err := tc.verifiedVersion(ctx, t, abs, tc.stampPath(t, "override"))
	if err != nil {
		return Resolved{}, fmt.Errorf("%s=%s does not run: %w (fix or unset it)", from, path, err)
	}
	if !versionMatches(v, t.Version) {
		fmt.Fprintf(tc.log, "! %s: %s=%s is %s, not the pinned %s; using it anyway\n", t.Name, from, path, v, t.Version)
	}
	return Resolved{Name: t.Name, Version: v, Path: abs, Source: SourceOverride}, nil
}

// fromPath accepts the tool on $PATH only at the pinned version.
func (tc *Toolchain) fromPath(ctx context.Context, t *Tool) (Resolved, string, bool) {
	p, err := exec.LookPath(t.Name)
	if err != nil {
		return Resolved{}, fmt.Sprintf("$PATH: no %s", t.Name), false
	}
	if p, err = filepath.Abs(p); err != nil {
		return Resolved{}, fmt.Sprintf("$PATH: %v", err), false
	}
	v, err := tc.verifiedVersion(ctx, t, p, tc.stampPath(t, "path"))
	if err != nil {
		return Resolved{}, fmt.Sprintf("$PATH: %s does not run: %v", p, err), false
	}
	if !versionMatches(v, t.Version) {
		return Resolved{}, fmt.Sprintf("$PATH: %s is %s, not %s", p, v, t.Version), false
	}
	return Resolved{Name: t.Name, Version: t.Version, Path: p, Source: SourcePath}, "", true
}

// fromCache accepts the cached binary if it is (still) verified.
func (tc *Toolchain) fromCache(ctx context.Context, t *Tool) (Resolved, string, bool) {
	p := tc.BinaryPath(t)
	if _, err := os.Stat(p); err != nil {
		return Resolved{}, fmt.Sprintf("cache: no %s", p), false
	}
	v, err := tc.verifiedVersion(ctx, t, p, tc.cacheStampPath(t))
	if err != nil {
		return Resolved{}, fmt.Sprintf("cache: %s does not run: %v", p, err), false
	}
	if !versionMatches(v, t.Version) {
		return Resolved{}, fmt.Sprintf("cache: %s is %s, not %s", p, v, t.Version), false
	}
	return Resolved{Name: t.Name, Version: t.Version, Path: p, Source: SourceCache}, "", true
}

// verifiedVersion returns the version of the binary at path: from its stamp while the file
// is unchanged, else by running it (and then writing the stamp).
func (tc *Toolchain) verifiedVersion(ctx context.Context, t *Tool, path, stampFile string) (string, error) {
	if s := readStamp(stampFile); s.Tool == t.Name && s.fresh(path) {
		return s.Version, nil
	}
	v, err := t.probe(ctx, path)
	if err != nil {
		return "", err
	}
	if s, err := newStamp(t.Name, v, path); err == nil {
		_ = s.write(stampFile) // best effort: without it we only probe again next time
	}
	return v, nil
}

// cacheStampPath is the stamp beside a cached binary.
func (tc *Toolchain) cacheStampPath(t *Tool) string {
	return filepath.Join(filepath.Dir(tc.BinaryPath(t)), ".stamp.json")
}

// stampPath is the stamp for a binary outside the cache (kind is "path" or "override").
func (tc *Toolchain) stampPath(t *Tool, kind string) string {
	return filepath.Join(tc.dir, "stamps", t.Name+"-"+kind+".json")
}

// install verifies a freshly built or downloaded binary and moves it into the cache.
func (tc *Toolchain) install(ctx context.Context, t *Tool, tmp string, src Source) (Resolved, error) {
	if err := os.Chmod(tmp, 0o755); err != nil {
		return Resolved{}, err
	}
	v, err := t.probe(ctx, tmp)
	if err != nil {
		return Resolved{}, fmt.Errorf("verify: %w", err)
	}
	if !versionMatches(v, t.Version) {
		return Resolved{}, fmt.Errorf("verify: the binary reports %s, want %s", v, t.Version)
	}
	final := tc.BinaryPath(t)
	if err := os.Rename(tmp, final); err != nil {
		return Resolved{}, fmt.Errorf("install into the cache: %w", err)
	}
	s, err := newStamp(t.Name, t.Version, final)
	if err == nil {
		err = s.write(tc.cacheStampPath(t))
	}
	if err != nil {
		return Resolved{}, fmt.Errorf("write stamp: %w", err)
	}
	return Resolved{Name: t.Name, Version: t.Version, Path: final, Source: src}, nil
}

// progressInterval is how often a long build says it is still running.
var progressInterval = time.Minute

// step announces an action on a status line, repeats a heartbeat while it runs (CI kills
// silent jobs) and reports the outcome with its duration.
func (tc *Toolchain) step(t *Tool, doing, what string, fn func() (Resolved, error)) (Resolved, error) {
	fmt.Fprintf(tc.log, "• %s %s %s %s…\n", doing, t.Name, t.Version, what)
	start := time.Now()
	done := make(chan struct{})
	go func() {
		tick := time.NewTicker(progressInterval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				fmt.Fprintf(tc.log, "  … still %s %s (%s)\n", doing, t.Name, time.Since(start).Round(time.Second))
			}
		}
	}()
	r, err := fn()
	close(done)
	took := time.Since(start).Round(time.Second)
	if err != nil {
		fmt.Fprintf(tc.log, "✗ %s %s (%s): %s\n", t.Name, t.Version, took, firstLines(err.Error(), 1))
		return r, err
	}
	fmt.Fprintf(tc.log, "✓ %s %s (%s)\n", t.Name, t.Version, took)
	return r, nil
}

// buildTool builds t into a temporary directory beside its cache slot, then installs it.
func (tc *Toolchain) buildTool(ctx context.Context, t *Tool) (Resolved, error) {
	return tc.step(t, "building", "from module source (first run, several minutes)", func() (Resolved, error) {
		slot := filepath.Dir(tc.BinaryPath(t))
		if err := os.MkdirAll(slot, 0o755); err != nil {
			return Resolved{}, err
		}
		tmp, err := os.MkdirTemp(slot, ".build-*")
		if err != nil {
			return Resolved{}, err
		}
		defer os.RemoveAll(tmp)
		out := filepath.Join(tmp, t.Name)
		if t.build != nil {
			err = t.build(ctx, tc, out)
		} else {
			err = tc.buildFromModule(ctx, t, out)
		}
		if err != nil {
			return Resolved{}, err
		}
		return tc.install(ctx, t, out, SourceBuilt)
	})
}

// downloadURL returns the URL t is downloaded from on this platform (through the mirror when
// one is set), or why it is not downloaded. It probes the release host once per Toolchain.
func (tc *Toolchain) downloadURL(ctx context.Context, t *Tool) (url, why string) {
	switch {
	case t.url == nil:
		return "", "download: upstream publishes no " + t.Name + " binary"
	case t.sums == nil:
		return "", "download: upstream publishes no checksum for " + t.Name + ", so a download could not be verified"
	case tc.opts.Offline:
		return "", "download: skipped (offline: POLYKUBE_OFFLINE=1 or Options.Offline)"
	}
	raw, _ := t.url(runtime.GOOS, runtime.GOARCH)
	url = tc.mirrored(raw)
	if err := tc.probe(ctx, url); err != nil {
		return "", fmt.Sprintf("download: skipped: %v (set POLYKUBE_OFFLINE=1 to skip this check)", err)
	}
	return url, ""
}
