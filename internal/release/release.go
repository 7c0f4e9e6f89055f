// Package release builds what a Polykube release holds, offline and without Docker, into one
// directory (make release VERSION=vX.Y.Z): the operator image for every platform as an OCI
// image layout with its SPDX SBOM, install.yaml pinned to the image's digest, the
// Helm chart rendered from the same kustomize build, the polykube-status binaries, and
// SHA256SUMS over all of it.
//
// Each artifact is a step that announces itself on a status line and reports what it wrote,
// as the test bed's pipeline does. Builds are reproducible for a given commit: timestamps come
// from the commit (SOURCE_DATE_EPOCH when set), binaries are built with -trimpath, and the
// version is stamped with -ldflags into internal/version.
package release

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

// Defaults of Options.
const (
	DefaultRepository = "ghcr.io/polykube/operator"
	DefaultDist       = "dist"
	// marker is written into every directory Build fills, so that a later run may empty that
	// directory, and never one it did not make.
	marker = ".polykube-release"
)

// Platform is an os/arch pair, as Go and OCI name them.
type Platform struct{ OS, Arch string }

func (p Platform) String() string { return p.OS + "/" + p.Arch }

// ParsePlatform reads "os/arch".
func ParsePlatform(s string) (Platform, error) {
	os, arch, ok := strings.Cut(s, "/")
	if !ok || os == "" || arch == "" || strings.Contains(arch, "/") {
		return Platform{}, fmt.Errorf("platform %q: write it as os/arch, for example linux/amd64", s)
	}
	return Platform{OS: os, Arch: arch}, nil
}

// Defaults: the platforms a release holds.
var (
	ImagePlatforms = []Platform{{"linux", "amd64"}, {"linux", "arm64"}}
	CLIPlatforms   = []Platform{{"linux", "amd64"}, {"linux", "arm64"}, {"darwin", "amd64"}, {"darwin", "arm64"}}
)

// Options say what to build and where.
type Options struct {
	// Version is the release's semver tag, vX.Y.Z with an optional pre-release and build.
	Version string
	// Dist is the output directory; it must be empty, absent, or an earlier release's.
	Dist string
	// RepoRoot is the root of the Polykube repository (the directory holding go.mod).
	RepoRoot string
	// Repository is where the image will be published (install.yaml names it with the digest).
	Repository string
	// ImagePlatforms and CLIPlatforms default to the package's variables of the same names.
	ImagePlatforms []Platform
	CLIPlatforms   []Platform
	// Go is the go command; "" means "go".
	Go string
	// SignKey, when set, is a cosign private key: the release then holds cosign signatures of
	// the image index and of the Flux artifact, and the public key (see sign.go).
	SignKey string
	// SignKeyPassword is SignKey's password; nil reads COSIGN_PASSWORD, as the cosign CLI does.
	SignKeyPassword []byte
	// Out receives the progress lines; nil discards them.
	Out io.Writer
}

// semverTag is Semantic Versioning 2.0.0 with the "v" prefix Go modules and Git tags use.
var semverTag = regexp.MustCompile(`^v(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)` +
	`(-((0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(\.(0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?` +
	`(\+([0-9a-zA-Z-]+(\.[0-9a-zA-Z-]+)*))?$`)

// ValidateVersion refuses anything but a semver tag.
func ValidateVersion(v string) error {
	if v == "" {
		return errors.New("VERSION is required: make release VERSION=vX.Y.Z (a semver tag, for example v0.1.0)")
	}
	if !semverTag.MatchString(v) {
		return fmt.Errorf("VERSION=%q is not a semver tag: write vMAJOR.MINOR.PATCH, optionally with -prerelease or +build (for example v0.1.0 or v0.2.0-rc.1)", v)
	}
	return nil
}

// Result is what Build wrote.
type Result struct {
	// IndexDigest is the digest of the operator image index ("sha256:…").
	IndexDigest string
	// ImageRef is Repository@IndexDigest, the reference install.yaml uses.
	ImageRef string
	// GitopsDigest is the digest of the Flux artifact's manifest.
	GitopsDigest string
	// Files are the paths written, relative to Dist, sorted, SHA256SUMS last.
	Files []string
}

// build carries what the steps share.
type build struct {
	Options
	commit string
	epoch  time.Time
	tmp    string
	out    io.Writer
	res    Result
}

// Build runs every step into o.Dist.
func Build(ctx context.Context, o Options) (*Result, error) {
	if err := ValidateVersion(o.Version); err != nil {
		return nil, err
	}
	if o.Repository == "" {
		o.Repository = DefaultRepository
	}
	if o.Dist == "" {
		o.Dist = DefaultDist
	}
	if o.Go == "" {
		o.Go = "go"
	}
	if o.ImagePlatforms == nil {
		o.ImagePlatforms = ImagePlatforms
	}
	if o.CLIPlatforms == nil {
		o.CLIPlatforms = CLIPlatforms
	}
	if _, err := os.Stat(filepath.Join(o.RepoRoot, "go.mod")); err != nil {
		return nil, fmt.Errorf("%s is not the Polykube repository (no go.mod): run make release from the repository's root", o.RepoRoot)
	}
	b := &build{Options: o, out: o.Out}
	if b.out == nil {
		b.out = io.Discard
	}
	dist, err := filepath.Abs(o.Dist)
	if err != nil {
		return nil, err
	}
	b.Dist = dist
	if err := prepareDist(dist); err != nil {
		return nil, err
	}
	if b.tmp, err = os.MkdirTemp("", "polykube-release-"); err != nil {
		return nil, err
	}
	defer os.RemoveAll(b.tmp)
	b.commit, b.epoch = b.source(ctx)

	steps := []struct {
		name string
		run  func(context.Context) (string, error)
	}{
		{"operator-image/ and operator-image.spdx.json", b.operatorImage},
		{"install.yaml", b.installYAML},
		{"Helm chart", b.helmChart},
		{"Flux OCI artifact of gitops/", b.gitopsArtifact},
		{"polykube-status binaries", b.cliBinaries},
		{"krew plugin", b.krewPlugin},
		{"cosign signatures", b.sign},
		{ManifestFile, b.writeManifest},
		{"SHA256SUMS", b.checksums},
	}
	start := time.Now()
	fmt.Fprintf(b.out, "Building Polykube %s (commit %s) into %s\n", o.Version, orUnknown(b.commit), dist)
	for _, s := range steps {
		if s.name == "cosign signatures" && o.SignKey == "" {
			fmt.Fprintf(b.out, " - cosign signatures: not signed (make release SIGN_KEY=cosign.key signs the image and the artifact)\n")
			continue
		}
		fmt.Fprintf(b.out, " • %s…\n", s.name)
		t := time.Now()
		detail, err := s.run(ctx)
		if err != nil {
			fmt.Fprintf(b.out, " ✗ %s: %v\n", s.name, err)
			return nil, fmt.Errorf("%s: %w", s.name, err)
		}
		fmt.Fprintf(b.out, " ✓ %s (%s, %s)\n", s.name, detail, time.Since(t).Round(100*time.Millisecond))
	}
	fmt.Fprintf(b.out, "Release %s in %s: %d files, image %s\n", o.Version, time.Since(start).Round(time.Second), len(b.res.Files), b.res.ImageRef)
	return &b.res, nil
}

func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// prepareDist makes dist an empty directory marked as a release's. An existing directory is
// emptied only when a release made it (the marker), so DIST=. or DIST=$HOME cannot be wiped.
func prepareDist(dist string) error {
	entries, err := os.ReadDir(dist)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	case len(entries) == 0:
	default:
		if _, err := os.Stat(filepath.Join(dist, marker)); err != nil {
			return fmt.Errorf("%s is not empty and was not written by make release: choose another DIST or empty it", dist)
		}
		if err := os.RemoveAll(dist); err != nil {
			return fmt.Errorf("empty the previous release in %s: %w", dist, err)
		}
	}
	if err := os.MkdirAll(dist, 0o755); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dist, marker), nil, 0o644)
}

// source returns the commit being released and the time every artifact is stamped with:
// SOURCE_DATE_EPOCH when set (the reproducible-builds convention), else the commit's time,
// else the Unix epoch. Outside a Git checkout the commit is "".
func (b *build) source(ctx context.Context) (string, time.Time) {
	var commit string
	if out, err := exec.CommandContext(ctx, "git", "-C", b.RepoRoot, "rev-parse", "HEAD").Output(); err == nil {
		commit = strings.TrimSpace(string(out))
	}
	if s := os.Getenv("SOURCE_DATE_EPOCH"); s != "" {
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			return commit, time.Unix(n, 0).UTC()
		}
	}
	if commit != "" {
		if out, err := exec.CommandContext(ctx, "git", "-C", b.RepoRoot, "log", "-1", "--format=%ct", commit).Output(); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64); err == nil {
				return commit, time.Unix(n, 0).UTC()
			}
		}
	}
	return commit, time.Unix(0, 0).UTC()
}

// goBuild cross-compiles a static binary of pkg for p, with the version stamped in.
func (b *build) goBuild(ctx context.Context, pkg string, p Platform, out string) error {
	const v = "github.com/polykube/polykube/internal/version"
	ldflags := fmt.Sprintf("-s -w -X %s.Version=%s -X %s.Commit=%s", v, b.Version, v, b.commit)
	cmd := exec.CommandContext(ctx, b.Go, "build", "-trimpath", "-ldflags", ldflags, "-o", out, pkg)
	cmd.Dir = b.RepoRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if p.OS != "" {
		// The zero Platform builds for this machine.
		cmd.Env = append(cmd.Env, "GOOS="+p.OS, "GOARCH="+p.Arch)
	}
	if output, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("CGO_ENABLED=0 GOOS=%s GOARCH=%s %s (in %s): %w\n%s", p.OS, p.Arch, strings.Join(cmd.Args, " "), cmd.Dir, err, output)
	}
	return nil
}

// cliBinaries builds polykube-status for every CLI platform. Each also works as the kubectl
// plugin when installed as kubectl-polykube.
func (b *build) cliBinaries(ctx context.Context) (string, error) {
	var names []string
	for _, p := range b.CLIPlatforms {
		name := fmt.Sprintf("polykube-status_%s_%s", p.OS, p.Arch)
		if p.OS == "windows" {
			name += ".exe"
		}
		fmt.Fprintf(b.out, "   building %s\n", name)
		if err := b.goBuild(ctx, "./cmd/polykube-status", p, filepath.Join(b.Dist, name)); err != nil {
			return "", err
		}
		names = append(names, name)
	}
	return strings.Join(names, ", "), nil
}
