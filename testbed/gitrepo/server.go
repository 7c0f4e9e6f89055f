// Package gitrepo is the test bed's Git side: a smart-HTTP Git server on loopback, the
// repository it serves (laid out like gitops/: the operator base, one entry point per
// cluster, the roster rendered from the topology, and workloads/), and commits to it.
package gitrepo

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/fluxcd/gitkit"
	"github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// RepoPath is the path of the served repository under the server root and in its URL.
const RepoPath = "polykube/gitops.git"

// Branch is the branch the test bed commits to and Flux follows.
const Branch = "main"

// URL is the clone URL of the repository served at addr (host:port); "" when there is no
// address (a run without the git add-on serves nothing).
func URL(addr string) string {
	if addr == "" {
		return ""
	}
	return "http://" + addr + "/" + RepoPath
}

// InitBare creates the bare repository under root unless it exists.
func InitBare(root string) error {
	dir := filepath.Join(root, RepoPath)
	if _, err := os.Stat(filepath.Join(dir, "HEAD")); err == nil {
		return nil
	}
	_, err := git.PlainInitWithOptions(dir, &git.PlainInitOptions{
		InitOptions: git.InitOptions{DefaultBranch: plumbing.NewBranchReferenceName(Branch)},
		Bare:        true,
	})
	if err != nil {
		return fmt.Errorf("init bare repository %s: %w", dir, err)
	}
	return nil
}

// Serve serves the repositories under root over smart HTTP on listen (host:port) until ctx
// ends. It uses fluxcd/gitkit, the library under fluxcd/pkg/gittestserver, directly:
// gittestserver binds a random port, and the test bed must restart the server on the port
// Flux already knows.
func Serve(ctx context.Context, root, listen string) error {
	if err := InitBare(root); err != nil {
		return err
	}
	srv := gitkit.New(gitkit.Config{Dir: root})
	if err := srv.Setup(); err != nil {
		return fmt.Errorf("git server: %w", err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.Handle("/", srv)
	l, err := net.Listen("tcp", listen)
	if err != nil {
		return fmt.Errorf("git server: listen on %s: %w", listen, err)
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = hs.Shutdown(sctx)
	}()
	if err := hs.Serve(l); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
