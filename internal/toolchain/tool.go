package toolchain

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// Tool describes one pinned binary: what it is called, which version we want, which Go
// module builds it, how to check a binary is that version, and where upstream publishes it.
type Tool struct {
	// Name is the binary name (kube-apiserver, etcd, …).
	Name string
	// Version is the pinned version, v-prefixed, as the binary reports it.
	Version string
	// Module is the Go module the binary is built from, at Version.
	Module string
	// Package is the main package to build.
	Package string

	// probeArgs run the binary to prove it works (exit 0): --version or version, whose
	// output carries the version; or --help when versionModule is set.
	probeArgs []string
	// versionModule, when set, takes the version from the Go build information of the
	// binary (the version of this module, main or dependency) instead of its output.
	versionModule string
	// releaseVersion is the version the binary reports when upstream numbers its releases
	// apart from its Go module (Prometheus 3.16.0 is the module's v0.316.0); probe maps it
	// back to Version, so the cache, stamps and checks all speak the module version.
	releaseVersion string
	// localReplace gives the version to use for a module the upstream go.mod replaces with a
	// local directory ("" drops the replace; the upstream require must then be valid).
	localReplace func(oldPath string) string
	// replace adds replace directives (module path -> version, or ./dir of a shim) to the
	// build module.
	replace map[string]string
	// shims are stand-ins for modules the module proxy refuses: module path -> directory of
	// the embedded shims (shims/<dir>, files with a .txt suffix), written into the build
	// module as ./shims/<dir> and used through replace.
	shims map[string]string
	// ldflags are passed to go build after -s -w.
	ldflags []string
	// tags are go build tags.
	tags []string
	// env is added to the environment of every go command of the build (GOTOOLCHAIN for a
	// module that needs a newer Go than Polykube's).
	env []string
	// url returns the upstream download URL for goos/goarch and, for an archive, the path of
	// the binary inside it. nil means upstream publishes no binary.
	url func(goos, goarch string) (url, member string)
	// sums returns where upstream publishes the SHA-256 of the file url returns: a file holding
	// just that sum (entry "") or a SHA256SUMS-style list ("<hex>  <file>" lines) in which the
	// sum is the one of entry. nil means upstream publishes none: the tool is then never
	// downloaded, since nothing could prove the download is the release.
	sums func(goos, goarch string) (url, entry string)
	// build overrides the module build (tests use it); nil means buildFromModule.
	build func(ctx context.Context, tc *Toolchain, out string) error
}

// EnvVar is the environment variable that overrides where the tool's binary is, e.g.
// POLYKUBE_KUBE_APISERVER_BINARY.
func (t *Tool) EnvVar() string {
	return "POLYKUBE_" + strings.ToUpper(strings.ReplaceAll(t.Name, "-", "_")) + "_BINARY"
}

// probeTimeout bounds one run of a binary's version command.
const probeTimeout = 30 * time.Second

// probe runs the binary with its probe arguments and returns the version it is.
func (t *Tool) probe(ctx context.Context, path string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, probeTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, t.probeArgs...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", path, strings.Join(t.probeArgs, " "), err, firstLines(out.String(), 5))
	}
	if t.versionModule != "" {
		return moduleVersion(path, t.versionModule)
	}
	v := parseVersion(out.String())
	if v == "" {
		return "", fmt.Errorf("%s %s printed no version: %s", path, strings.Join(t.probeArgs, " "), firstLines(out.String(), 5))
	}
	if t.releaseVersion != "" && versionMatches(v, t.releaseVersion) {
		return t.Version, nil
	}
	return v, nil
}

// versionRE finds the first semantic version in a tool's version output ("Kubernetes
// v1.36.3", "etcd Version: 3.6.8", "OpenTofu v1.12.6"); "go1.26.8" does not count.
var versionRE = regexp.MustCompile(`(?:^|[^\w.])v?(\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?)`)

// parseVersion returns the first version in out, v-prefixed, or "" when there is none.
func parseVersion(out string) string {
	m := versionRE.FindStringSubmatch(out)
	if m == nil {
		return ""
	}
	return "v" + m[1]
}

// versionMatches reports whether a reported version is the pinned one. Both may omit the
// v prefix; pre-release and build suffixes must match exactly (v1.12.6-dev is not v1.12.6).
func versionMatches(got, want string) bool {
	return got != "" && "v"+strings.TrimPrefix(got, "v") == "v"+strings.TrimPrefix(want, "v")
}

// moduleVersion reads the version of module from a Go binary's build information: the
// main module's version when it is that module, else the version of that dependency.
func moduleVersion(path, module string) (string, error) {
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("read Go build information of %s: %w", path, err)
	}
	if info.Main.Path == module && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version, nil
	}
	for _, dep := range info.Deps {
		if dep.Path == module && dep.Replace == nil {
			return dep.Version, nil
		}
	}
	return "", fmt.Errorf("%s was not built from module %s (main module %s %s)", path, module, info.Main.Path, info.Main.Version)
}

// firstLines returns at most n lines of s, trimmed.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append(lines[:n], "…")
	}
	return strings.Join(lines, "\n")
}

// lastLines returns at most n trailing lines of s, trimmed.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = append([]string{"…"}, lines[len(lines)-n:]...)
	}
	return strings.Join(lines, "\n")
}
