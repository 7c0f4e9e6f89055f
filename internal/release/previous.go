package release

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
)

// PreviousFile names the previous release, relative to the repository's root.
const PreviousFile = "release/PREVIOUS"

// Previous is the release an upgrade to this tree starts from (PreviousFile).
type Previous struct {
	// Version is the previous release's semver tag (or the one its commit is a candidate for).
	Version string
	// Commit is the full hash of the commit the previous release is built from.
	Commit string
	// Contract is the hash of the upgrade contract's golden files as that release produced them
	// (ContractHash); empty when not recorded.
	Contract string
}

var fullHash = regexp.MustCompile(`^[0-9a-f]{40}$`)

// ReadPrevious reads PreviousFile in repoRoot: "key: value" lines (version, commit, contract),
// with # comments.
func ReadPrevious(repoRoot string) (Previous, error) {
	path := filepath.Join(repoRoot, PreviousFile)
	b, err := os.ReadFile(path)
	if err != nil {
		return Previous{}, fmt.Errorf("read the previous release: %w (it names the release an upgrade starts from; see docs/upgrading.md)", err)
	}
	var p Previous
	sc := bufio.NewScanner(bytes.NewReader(b))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		value = strings.TrimSpace(value)
		switch key = strings.TrimSpace(key); {
		case !ok:
			return Previous{}, fmt.Errorf("%s:%d: %q is not \"key: value\"", path, n, line)
		case key == "version":
			p.Version = value
		case key == "commit":
			p.Commit = value
		case key == "contract":
			p.Contract = value
		default:
			return Previous{}, fmt.Errorf("%s:%d: unknown key %q: the keys are version, commit and contract", path, n, key)
		}
	}
	if err := ValidateVersion(p.Version); err != nil {
		return Previous{}, fmt.Errorf("%s: version: %w", path, err)
	}
	if !fullHash.MatchString(p.Commit) {
		return Previous{}, fmt.Errorf("%s: commit %q is not a full 40-character commit hash: write `git rev-parse <tag>`", path, p.Commit)
	}
	return p, nil
}

// PreviousOperatorOptions say where to build the previous release's operator.
type PreviousOperatorOptions struct {
	// RepoRoot is the root of the Polykube repository; PreviousFile is read from it and the
	// worktree is added to its Git repository.
	RepoRoot string
	// Output is the path of the binary to write.
	Output string
	// Platform is the binary's os/arch; nil builds for this machine (GOOS and GOARCH unset).
	Platform *Platform
	// Go is the go command; "" means "go".
	Go string
	// Out receives the progress lines; nil discards them.
	Out io.Writer
}

// BuildPreviousOperator builds the operator binary of the previous release: it checks the
// commit PreviousFile names out into a temporary git worktree, builds ./operator there with that
// release's version and commit stamped in (as make release does), and removes the worktree.
func BuildPreviousOperator(ctx context.Context, o PreviousOperatorOptions) (Previous, error) {
	prev, err := ReadPrevious(o.RepoRoot)
	if err != nil {
		return prev, err
	}
	if o.Go == "" {
		o.Go = "go"
	}
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	output, err := filepath.Abs(o.Output)
	if err != nil {
		return prev, err
	}
	if err := git(ctx, o.RepoRoot, "cat-file", "-e", prev.Commit+"^{commit}"); err != nil {
		return prev, fmt.Errorf("the previous release's commit %s (%s) is not in this clone: fetch it (git fetch --unshallow, or git fetch origin %s): %w",
			prev.Commit, PreviousFile, prev.Commit, err)
	}
	tmp, err := os.MkdirTemp("", "polykube-previous-")
	if err != nil {
		return prev, err
	}
	defer os.RemoveAll(tmp)
	src := filepath.Join(tmp, "src")
	fmt.Fprintf(out, " • git worktree of %s (%s) in %s…\n", prev.Version, prev.Commit, src)
	if err := git(ctx, o.RepoRoot, "worktree", "add", "--detach", src, prev.Commit); err != nil {
		return prev, err
	}
	defer func() {
		// Remove the worktree and its entry in the repository, even when the build failed.
		if err := git(context.WithoutCancel(ctx), o.RepoRoot, "worktree", "remove", "--force", src); err != nil {
			fmt.Fprintf(out, " ✗ remove the worktree %s: %v (remove it with git worktree remove --force %s)\n", src, err, src)
		}
	}()
	fmt.Fprintf(out, " • go build ./operator (version %s)…\n", prev.Version)
	b := &build{Options: Options{Version: prev.Version, RepoRoot: src, Go: o.Go}, commit: prev.Commit}
	p := Platform{}
	if o.Platform != nil {
		p = *o.Platform
	}
	if err := b.goBuild(ctx, "./operator", p, output); err != nil {
		return prev, err
	}
	fmt.Fprintf(out, " ✓ %s: the operator of %s\n", output, prev.Version)
	return prev, nil
}

func git(ctx context.Context, dir string, args ...string) error {
	cmd := exec.CommandContext(ctx, "git", append([]string{"-C", dir}, args...)...)
	if output, err := cmd.CombinedOutput(); err != nil {
		var ee *exec.ExitError
		if errors.As(err, &ee) || len(output) > 0 {
			return fmt.Errorf("%s: %w\n%s", strings.Join(cmd.Args, " "), err, output)
		}
		return fmt.Errorf("%s: %w", strings.Join(cmd.Args, " "), err)
	}
	return nil
}
