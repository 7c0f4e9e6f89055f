package testbed

import (
	"context"
	"path/filepath"

	"github.com/polykube/polykube/testbed/gitrepo"
)

// Committer is what CommitDir needs of a bed.
type Committer interface {
	Commit(ctx context.Context, ch gitrepo.Change) (string, error)
}

// CommitDir commits the YAML files of a local directory to workloads/<name>/ of the bed's
// repository (name defaults to the directory's base name, the message to "workloads: update
// <name>"), replacing what was there, and asks Flux to fetch it now. It returns the revision.
func CommitDir(ctx context.Context, b Committer, dir, name, message string) (string, error) {
	if resolved, err := filepath.EvalSymlinks(dir); err == nil {
		dir = resolved // WalkDir does not descend into a symlinked root
	}
	if name == "" {
		abs, err := filepath.Abs(dir)
		if err != nil {
			return "", err
		}
		name = filepath.Base(abs)
	}
	files, err := gitrepo.WorkloadFiles(dir, name)
	if err != nil {
		return "", err
	}
	if message == "" {
		message = "workloads: update " + name
	}
	return b.Commit(ctx, gitrepo.Change{Put: files, Remove: []string{gitrepo.WorkloadsDir + "/" + name}, Message: message})
}
