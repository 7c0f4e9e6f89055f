package host

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// CommitDir is testbed.CommitDir on this run.
func (tb *Testbed) CommitDir(ctx context.Context, dir, name, message string) (string, error) {
	return testbed.CommitDir(ctx, tb, dir, name, message)
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
	tb.Fetch(ctx)
	return rev, nil
}
