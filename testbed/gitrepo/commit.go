package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/go-git/go-billy/v5"
	"github.com/go-git/go-billy/v5/memfs"
	"github.com/go-git/go-billy/v5/util"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/memory"
)

// Change is what one commit does to the tree.
type Change struct {
	// Put writes files (slash-separated paths from the repository root).
	Put map[string][]byte
	// Remove deletes files or whole directories.
	Remove []string
	// Message is the commit message.
	Message string
}

// Author signs the test bed's commits.
var Author = object.Signature{Name: "polykube-testbed", Email: "testbed@polykube.invalid"}

// Commit clones the repository at url, applies the change, refreshes workloads/
// kustomization.yaml, commits and pushes. It returns the revision as Flux reports it
// ("main@sha1:<hash>"). A commit that changes nothing returns the current revision.
func Commit(ctx context.Context, url string, ch Change) (string, error) {
	var lastErr error
	for attempt := 0; attempt < 3; attempt++ {
		rev, err := commitOnce(ctx, url, ch)
		if err == nil || !errors.Is(err, git.ErrNonFastForwardUpdate) {
			return rev, err
		}
		lastErr = err // someone pushed in between: clone again
	}
	return "", lastErr
}

func commitOnce(ctx context.Context, url string, ch Change) (string, error) {
	fs := memfs.New()
	repo, err := git.CloneContext(ctx, memory.NewStorage(), fs, &git.CloneOptions{
		URL: url, ReferenceName: plumbing.NewBranchReferenceName(Branch), SingleBranch: true,
	})
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		if repo, err = initRepo(fs, url); err != nil {
			return "", err
		}
	case err != nil:
		return "", fmt.Errorf("clone %s: %w", url, err)
	}
	wt, err := repo.Worktree()
	if err != nil {
		return "", err
	}
	for _, p := range ch.Remove {
		if err := util.RemoveAll(fs, p); err != nil {
			return "", fmt.Errorf("remove %s: %w", p, err)
		}
	}
	for p, data := range ch.Put {
		if err := util.WriteFile(fs, p, data, 0o644); err != nil {
			return "", fmt.Errorf("write %s: %w", p, err)
		}
	}
	if err := writeWorkloadsKustomization(fs); err != nil {
		return "", err
	}
	if err := wt.AddWithOptions(&git.AddOptions{All: true}); err != nil {
		return "", fmt.Errorf("git add: %w", err)
	}
	status, err := wt.Status()
	if err != nil {
		return "", err
	}
	if status.IsClean() {
		head, err := repo.Head()
		if err != nil {
			return "", err
		}
		return Revision(head.Hash()), nil
	}
	sig := Author
	sig.When = time.Now()
	msg := ch.Message
	if msg == "" {
		msg = "testbed: update"
	}
	hash, err := wt.Commit(msg, &git.CommitOptions{Author: &sig})
	if err != nil {
		return "", fmt.Errorf("git commit: %w", err)
	}
	err = repo.PushContext(ctx, &git.PushOptions{
		RemoteName: "origin",
		RefSpecs:   []config.RefSpec{config.RefSpec("refs/heads/" + Branch + ":refs/heads/" + Branch)},
	})
	if err != nil {
		return "", fmt.Errorf("git push to %s: %w", url, err)
	}
	return Revision(hash), nil
}

func initRepo(fs billy.Filesystem, url string) (*git.Repository, error) {
	repo, err := git.InitWithOptions(memory.NewStorage(), fs, git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(Branch)})
	if err != nil {
		return nil, err
	}
	_, err = repo.CreateRemote(&config.RemoteConfig{Name: "origin", URLs: []string{url}})
	return repo, err
}

// Revision formats a commit hash the way Flux reports a Git revision.
func Revision(h plumbing.Hash) string { return Branch + "@sha1:" + h.String() }

// Head returns the current revision of the served repository.
func Head(ctx context.Context, url string) (string, error) {
	rem := git.NewRemote(memory.NewStorage(), &config.RemoteConfig{Name: "origin", URLs: []string{url}})
	refs, err := rem.ListContext(ctx, &git.ListOptions{})
	if err != nil {
		return "", fmt.Errorf("list refs of %s: %w", url, err)
	}
	for _, r := range refs {
		if r.Name() == plumbing.NewBranchReferenceName(Branch) {
			return Revision(r.Hash()), nil
		}
	}
	return "", fmt.Errorf("%s has no branch %s", url, Branch)
}

// writeWorkloadsKustomization lists every directory under workloads/ that holds a
// kustomization.yaml, and gives directories of plain manifests one listing their files.
func writeWorkloadsKustomization(fs billy.Filesystem) error {
	if err := fs.MkdirAll(WorkloadsDir, 0o755); err != nil {
		return err
	}
	entries, err := fs.ReadDir(WorkloadsDir)
	if err != nil {
		return err
	}
	var dirs []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := path.Join(WorkloadsDir, e.Name())
		if _, err := fs.Stat(path.Join(dir, "kustomization.yaml")); err != nil {
			files, err := manifestFiles(fs, dir)
			if err != nil {
				return err
			}
			if len(files) == 0 {
				continue
			}
			if err := util.WriteFile(fs, path.Join(dir, "kustomization.yaml"), kustomization(files, ""), 0o644); err != nil {
				return err
			}
		}
		dirs = append(dirs, e.Name())
	}
	sort.Strings(dirs)
	return util.WriteFile(fs, path.Join(WorkloadsDir, "kustomization.yaml"), kustomization(dirs, ""), 0o644)
}

// manifestFiles lists the YAML files under dir, relative to it, recursively.
func manifestFiles(fs billy.Filesystem, dir string) ([]string, error) {
	var out []string
	err := util.Walk(fs, dir, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() && (strings.HasSuffix(p, ".yaml") || strings.HasSuffix(p, ".yml")) {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(p, dir), "/"))
		}
		return nil
	})
	slices.Sort(out)
	return out, err
}
