package release

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
)

// repoRoot is the repository's root, two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestReadPrevious_TheRepositoryNamesAPreviousRelease(t *testing.T) {
	g := NewWithT(t)
	p, err := ReadPrevious(repoRoot(t))
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Version).To(Equal("v0.1.0"))
	g.Expect(p.Commit).To(MatchRegexp(`^[0-9a-f]{40}$`))
}

func TestReadPrevious_RefusesWhatItCannotBuild(t *testing.T) {
	for name, tt := range map[string]struct{ file, want string }{
		"no version":    {"commit: e80056297550cbb20051896397597c196960a4fa\n", "VERSION is required"},
		"not semver":    {"version: 0.1\ncommit: e80056297550cbb20051896397597c196960a4fa\n", "not a semver tag"},
		"short commit":  {"version: v0.1.0\ncommit: e800562\n", "not a full 40-character commit hash"},
		"unknown key":   {"version: v0.1.0\ntag: v0.1.0\n", `unknown key "tag"`},
		"not key value": {"v0.1.0\n", `is not "key: value"`},
	} {
		t.Run(name, func(t *testing.T) {
			g := NewWithT(t)
			root := t.TempDir()
			g.Expect(os.MkdirAll(filepath.Join(root, "release"), 0o755)).To(Succeed())
			g.Expect(os.WriteFile(filepath.Join(root, PreviousFile), []byte("# comment\n"+tt.file), 0o644)).To(Succeed())
			_, err := ReadPrevious(root)
			g.Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

// TestBuildPreviousOperator builds the previous release's operator from a git worktree of its
// commit, as the upgrade scenarios start a fleet on it, and runs it with --version: it must say
// the previous release's version and commit, and leave no worktree behind.
func TestBuildPreviousOperator(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the operator of another commit (about a minute); not with -short")
	}
	g := NewWithT(t)
	root := repoRoot(t)
	if err := exec.Command("git", "-C", root, "rev-parse", "--git-dir").Run(); err != nil {
		t.Fatalf("%s is not a Git checkout, and the previous release is built from one: %v", root, err)
	}
	before := worktrees(t, root)
	bin := filepath.Join(t.TempDir(), "polykube-operator-previous")
	var progress strings.Builder
	prev, err := BuildPreviousOperator(context.Background(), PreviousOperatorOptions{RepoRoot: root, Output: bin, Out: &progress})
	t.Log(progress.String())
	g.Expect(err).NotTo(HaveOccurred())

	out, err := exec.Command(bin, "--version").CombinedOutput()
	g.Expect(err).NotTo(HaveOccurred(), "%s --version: %s", bin, out)
	g.Expect(string(out)).To(HavePrefix("polykube-operator " + prev.Version + " (commit " + prev.Commit + ")"))
	g.Expect(worktrees(t, root)).To(Equal(before), "the temporary worktree was not removed")
}

func worktrees(t *testing.T, root string) []string {
	t.Helper()
	out, err := exec.Command("git", "-C", root, "worktree", "list", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	var wts []string
	for _, l := range strings.Split(string(out), "\n") {
		if p, ok := strings.CutPrefix(l, "worktree "); ok {
			wts = append(wts, p)
		}
	}
	return wts
}

// TestPreviousRelease_KeepsTheUpgradeContract runs this tree's upgrade-contract tests
// (placement's TestContract_Allocation, the workload reconciler's TestContract_RenderedObjects)
// against the previous release's code (CheckPreviousContract): the previous release must
// compute the allocation and render the objects the golden files pin, as this tree does. So
// the golden files cannot change unless release/PREVIOUS moves too.
func TestPreviousRelease_KeepsTheUpgradeContract(t *testing.T) {
	if testing.Short() {
		t.Skip("compiles the tests of another commit; not with -short")
	}
	var progress strings.Builder
	prev, err := CheckPreviousContract(context.Background(), repoRoot(t), "", &progress)
	t.Log(progress.String())
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("the previous release %s (%s) keeps the contract", prev.Version, prev.Commit)
}

// TestCachedPreviousOperator_BuildsOncePerCommit: a binary in the cache under the previous
// release's commit is used as it is (no git, no build: the repository here has no history),
// and a build that fails leaves nothing in the cache for the next call to mistake for a binary.
func TestCachedPreviousOperator_BuildsOncePerCommit(t *testing.T) {
	g := NewWithT(t)
	const commit = "e80056297550cbb20051896397597c196960a4fa"
	root, cache := t.TempDir(), t.TempDir()
	g.Expect(os.MkdirAll(filepath.Join(root, "release"), 0o755)).To(Succeed())
	g.Expect(os.WriteFile(filepath.Join(root, PreviousFile), []byte("version: v0.1.0\ncommit: "+commit+"\n"), 0o644)).To(Succeed())
	o := PreviousOperatorOptions{RepoRoot: root, Platform: &Platform{OS: "linux", Arch: "arm64"}}

	_, _, err := CachedPreviousOperator(context.Background(), o, cache)
	g.Expect(err).To(MatchError(ContainSubstring("is not in this clone")))
	dir := filepath.Join(cache, PreviousOperatorCacheDir, commit+"-linux-arm64")
	entries, err := os.ReadDir(dir)
	g.Expect(err).NotTo(HaveOccurred())
	for _, e := range entries {
		g.Expect(e.Name()).To(Equal(".lock"), "a failed build left %s in the cache", e.Name())
	}

	bin := filepath.Join(dir, "polykube-operator")
	g.Expect(os.WriteFile(bin, []byte("#!/bin/sh\n"), 0o755)).To(Succeed())
	got, prev, err := CachedPreviousOperator(context.Background(), o, cache)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(got).To(Equal(bin))
	g.Expect(prev.Commit).To(Equal(commit))
}
