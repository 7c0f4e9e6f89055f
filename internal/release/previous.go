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
	"runtime"
	"strings"
	"syscall"
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
	output, err := filepath.Abs(o.Output)
	if err != nil {
		return Previous{}, err
	}
	out := orDiscard(o.Out)
	return inPreviousWorktree(ctx, o.RepoRoot, out, func(prev Previous, src string) error {
		fmt.Fprintf(out, " • go build ./operator (version %s)…\n", prev.Version)
		b := &build{Options: Options{Version: prev.Version, RepoRoot: src, Go: orGo(o.Go)}, commit: prev.Commit}
		p := Platform{}
		if o.Platform != nil {
			p = *o.Platform
		}
		if err := b.goBuild(ctx, "./operator", p, output); err != nil {
			return err
		}
		fmt.Fprintf(out, " ✓ %s: the operator of %s\n", output, prev.Version)
		return nil
	})
}

// ContractFiles are the upgrade contract's corpus, golden files and the tests that compare
// them (docs/upgrading.md), relative to the repository's root: what CheckPreviousContract lays
// over the previous release's tree.
var ContractFiles = []string{
	"internal/golden/fields.go",
	"placement/contract",
	"placement/contract_test.go",
	"placement/testdata/contract",
	"operator/reconcilers/workload/contract_test.go",
	"operator/reconcilers/workload/testdata/contract",
}

// ContractTests are the packages and the test pattern CheckPreviousContract runs.
var (
	ContractPackages = []string{"./placement/", "./operator/reconcilers/workload/"}
	ContractPattern  = "^TestContract_"
	// ContractTests must each pass in the previous release's tree.
	ContractTests = []string{"TestContract_Allocation", "TestContract_RenderedObjects"}
)

// CheckPreviousContract runs this tree's upgrade-contract tests against the previous release's
// code: it checks the previous release's commit out into a temporary git worktree, lays this
// tree's ContractFiles over it (the corpus, the golden files and the tests, not the code under
// test) and runs ContractPackages' ContractPattern tests there. They pass when the previous
// release computes the same allocation and renders the same objects as this tree's golden
// files pin, which this tree's own run of the same tests checks for this tree: together, two
// operators of the two releases agree on the corpus.
//
// The golden files can therefore change only together with release/PREVIOUS: a change of what
// the operator computes or renders fails here until the previous release is one that computes
// or renders the same (which is what the skew policy requires of versions running side by side).
func CheckPreviousContract(ctx context.Context, repoRoot, goCmd string, out io.Writer) (Previous, error) {
	out = orDiscard(out)
	return inPreviousWorktree(ctx, repoRoot, out, func(prev Previous, src string) error {
		for _, f := range ContractFiles {
			if err := overlay(filepath.Join(repoRoot, f), filepath.Join(src, f)); err != nil {
				return fmt.Errorf("lay %s over the previous release's tree: %w", f, err)
			}
		}
		args := append([]string{"test", "-count=1", "-v", "-run", ContractPattern}, ContractPackages...)
		fmt.Fprintf(out, " • %s %s in the previous release's tree…\n", orGo(goCmd), strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, orGo(goCmd), args...)
		cmd.Dir = src
		output, err := cmd.CombinedOutput()
		if err != nil {
			return fmt.Errorf("the previous release (%s, %s) does not compute or render what this tree's upgrade-contract golden files pin: "+
				"two operators of the two releases would disagree or roll pods during an upgrade. Either this tree changed the contract "+
				"(undo it, or gate it on every member's version: docs/upgrading.md) or %s names a release this tree may not be upgraded from:\n%s",
				prev.Version, prev.Commit, PreviousFile, failures(output))
		}
		// A pattern that matches nothing passes: make sure the tests ran.
		for _, name := range ContractTests {
			if !strings.Contains(string(output), "--- PASS: "+name+" ") {
				return fmt.Errorf("%s did not run in the previous release's tree (does %s still name it?):\n%s", name, "ContractTests", output)
			}
		}
		fmt.Fprintf(out, " ✓ the previous release %s computes and renders what the golden files pin\n", prev.Version)
		return nil
	})
}

// failures drops the lines of passing tests from go test -v output.
func failures(output []byte) string {
	var keep []string
	for _, l := range strings.Split(string(output), "\n") {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "=== RUN") || strings.HasPrefix(t, "--- PASS") {
			continue
		}
		keep = append(keep, l)
	}
	return strings.Join(keep, "\n")
}

// overlay replaces dst with a copy of the file or directory src.
func overlay(src, dst string) error {
	fi, err := os.Stat(src)
	if err != nil {
		return err
	}
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	if fi.IsDir() {
		return os.CopyFS(dst, os.DirFS(src))
	}
	b, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, b, 0o644)
}

// InPreviousWorktree runs fn in a temporary git worktree of the previous release's commit (its
// directory is fn's second argument) and removes the worktree afterwards, also when fn fails:
// the test bed's upgrade scenario renders that release's operator base from it.
func InPreviousWorktree(ctx context.Context, repoRoot string, out io.Writer, fn func(Previous, string) error) (Previous, error) {
	return inPreviousWorktree(ctx, repoRoot, out, fn)
}

// inPreviousWorktree runs fn in a temporary git worktree of the previous release's commit and
// removes the worktree afterwards, also when fn fails.
func inPreviousWorktree(ctx context.Context, repoRoot string, out io.Writer, fn func(Previous, string) error) (Previous, error) {
	prev, err := ReadPrevious(repoRoot)
	if err != nil {
		return prev, err
	}
	if err := git(ctx, repoRoot, "cat-file", "-e", prev.Commit+"^{commit}"); err != nil {
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
	if err := git(ctx, repoRoot, "worktree", "add", "--detach", src, prev.Commit); err != nil {
		return prev, err
	}
	defer func() {
		// Remove the worktree and its entry in the repository, even when fn failed.
		if err := git(context.WithoutCancel(ctx), repoRoot, "worktree", "remove", "--force", src); err != nil {
			fmt.Fprintf(out, " ✗ remove the worktree %s: %v (remove it with git worktree remove --force %s)\n", src, err, src)
		}
	}()
	return prev, fn(prev, src)
}

func orDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}

func orGo(g string) string {
	if g == "" {
		return "go"
	}
	return g
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

// PreviousOperatorCacheDir is where CachedPreviousOperator keeps the previous releases'
// operators, under the toolchain cache (outside the repository, so that a clean clone, a
// worktree and CI reuse one build): previous-operator/<commit>-<os>-<arch>/polykube-operator.
const PreviousOperatorCacheDir = "previous-operator"

// CachedPreviousOperator returns the path of the previous release's operator binary in
// cacheDir, building it there (BuildPreviousOperator) only when it is not there yet: the key
// is the commit release/PREVIOUS names, so the build happens once per previous release and
// machine, and moving release/PREVIOUS builds the next one. Concurrent callers wait for one
// another on a lock file; a build that fails leaves nothing behind. o.Output is ignored.
func CachedPreviousOperator(ctx context.Context, o PreviousOperatorOptions, cacheDir string) (string, Previous, error) {
	prev, err := ReadPrevious(o.RepoRoot)
	if err != nil {
		return "", prev, err
	}
	p := Platform{OS: runtime.GOOS, Arch: runtime.GOARCH}
	if o.Platform != nil {
		p = *o.Platform
	}
	dir := filepath.Join(cacheDir, PreviousOperatorCacheDir, prev.Commit+"-"+p.OS+"-"+p.Arch)
	bin := filepath.Join(dir, "polykube-operator")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", prev, fmt.Errorf("create the cache of the previous release's operator: %w", err)
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", prev, err
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", prev, fmt.Errorf("lock %s: %w", lock.Name(), err)
	}
	defer syscall.Flock(int(lock.Fd()), syscall.LOCK_UN) //nolint:errcheck // closing the file releases it too
	if fi, err := os.Stat(bin); err == nil && fi.Mode().IsRegular() {
		fmt.Fprintf(orDiscard(o.Out), " ✓ %s: the operator of %s (cached)\n", bin, prev.Version)
		return bin, prev, nil
	}
	o.Output = bin + ".partial"
	defer os.Remove(o.Output)
	if _, err := BuildPreviousOperator(ctx, o); err != nil {
		return "", prev, err
	}
	if err := os.Rename(o.Output, bin); err != nil {
		return "", prev, err
	}
	return bin, prev, nil
}
