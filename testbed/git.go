package testbed

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/polykube/polykube/testbed/gitrepo"
)

// CommitDir commits the YAML files of a local directory to workloads/<name>/ of the served
// repository (name defaults to the directory's base name), replacing what was there, and
// asks Flux to fetch it now. It returns the revision.
func (tb *Testbed) CommitDir(ctx context.Context, dir, name, message string) (string, error) {
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
	return tb.Commit(ctx, gitrepo.Change{Put: files, Remove: []string{gitrepo.WorkloadsDir + "/" + name}, Message: message})
}

// Commit commits a change to the served repository and asks Flux to fetch it now.
func (tb *Testbed) Commit(ctx context.Context, ch gitrepo.Change) (string, error) {
	if tb.GitURL() == "" {
		return "", fmt.Errorf("run %s has no Git server: bring it up with the git add-on", filepath.Base(tb.dir))
	}
	rev, err := gitrepo.Commit(ctx, tb.GitURL(), ch)
	if err != nil {
		return "", err
	}
	if tb.state.Topology.HasAddon("flux") {
		tb.Fetch(ctx)
	}
	return rev, nil
}
