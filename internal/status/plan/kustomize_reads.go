package plan

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// plan -k renders like Flux's kustomize-controller, with no load restrictions: a kustomization
// may read any file the user can read (../../, an absolute path) and clone remote bases with
// git. Running it on a checkout of someone else's branch should not do either unseen, so the
// build's file system notes both and the CLI prints them to stderr. kustomize clones with its own
// git runner into a temporary directory named kustomize-*, then reads the clone through this file
// system; the repository is named from the clone's .git/config. (Remote files fetched over HTTP do
// not go through the file system and are not listed: docs/known-limitations.md.)

// readsLog is a file system on disk that records what a build reads outside root.
type readsLog struct {
	filesys.FileSystem
	root    string
	tmp     string
	outside map[string]bool
	clones  map[string]string // clone directory -> repository URL
}

func newReadsLog(root string) *readsLog {
	l := &readsLog{FileSystem: filesys.MakeFsOnDisk(), root: realPath(root), tmp: realPath(os.TempDir()),
		outside: map[string]bool{}, clones: map[string]string{}}
	return l
}

// realPath is p absolute with symbolic links resolved, or as absolute as it gets.
func realPath(p string) string {
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p
}

func (l *readsLog) note(path string) {
	p := realPath(path)
	if rel, err := filepath.Rel(l.root, p); err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return
	}
	if rel, err := filepath.Rel(l.tmp, p); err == nil && strings.HasPrefix(rel, "kustomize-") {
		clone := filepath.Join(l.tmp, strings.SplitN(rel, string(filepath.Separator), 2)[0])
		if _, seen := l.clones[clone]; !seen {
			l.clones[clone] = originOf(clone)
		}
		return
	}
	l.outside[p] = true
}

func (l *readsLog) ReadFile(path string) ([]byte, error) {
	l.note(path)
	return l.FileSystem.ReadFile(path)
}

func (l *readsLog) Open(path string) (filesys.File, error) {
	l.note(path)
	return l.FileSystem.Open(path)
}

// report writes what the build of dir read outside it and which repositories it cloned.
func (l *readsLog) report(w io.Writer, dir string) {
	var clones []string
	for clone, url := range l.clones {
		if url == "" {
			url = "in " + clone + " (its origin could not be read)"
		}
		clones = append(clones, url)
	}
	sort.Strings(clones)
	for _, url := range clones {
		fmt.Fprintf(w, "plan -k: kustomize build %s cloned the remote base %s with git\n", dir, url)
	}
	var files []string
	for f := range l.outside {
		files = append(files, f)
	}
	sort.Strings(files)
	for _, f := range files {
		fmt.Fprintf(w, "plan -k: kustomize build %s read %s, outside that directory\n", dir, f)
	}
}

// originOf is the URL of the remote "origin" in the git configuration of the clone at dir.
func originOf(dir string) string {
	f, err := os.Open(filepath.Join(dir, ".git", "config"))
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }()
	inOrigin := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			inOrigin = line == `[remote "origin"]`
			continue
		}
		if k, v, ok := strings.Cut(line, "="); ok && inOrigin && strings.TrimSpace(k) == "url" {
			return strings.TrimSpace(v)
		}
	}
	return ""
}
