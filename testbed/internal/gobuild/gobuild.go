// Package gobuild builds the test bed's own programs (the operator, polykube-testbed) from
// the Polykube checkout once per content: the output is named after a hash of every Go file
// the package depends on inside the module, plus go.mod and go.sum, so an unchanged tree
// reuses the binary without linking again.
package gobuild

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/polykube/polykube/testbed/internal/shell"
)

// Module is the module path of the Polykube checkout.
const Module = "github.com/polykube/polykube"

// FindRoot returns the Polykube checkout containing dir (or one of its parents).
func FindRoot(dir string) (string, error) {
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for d := dir; ; d = filepath.Dir(d) {
		if data, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil {
			if first, _, _ := strings.Cut(string(data), "\n"); strings.TrimSpace(first) == "module "+Module {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("%s is not inside a Polykube checkout (module %s); run from the repository or pass --source-dir", dir, Module)
		}
	}
}

// Build builds the main package pkg (relative, e.g. "./operator") of the checkout at root
// into outDir and returns the binary's path, reusing an earlier build of the same content.
func Build(ctx context.Context, root, pkg, outDir string) (string, error) {
	return build(ctx, root, pkg, outDir, "", nil)
}

// BuildStatic is Build with cgo off: a binary that runs where the host's C library is not, such
// as in a kind node.
func BuildStatic(ctx context.Context, root, pkg, outDir string) (string, error) {
	return build(ctx, root, pkg, outDir, "-static", []string{"CGO_ENABLED=0"})
}

func build(ctx context.Context, root, pkg, outDir, suffix string, env []string) (string, error) {
	if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(pkg), "main.go")); err != nil {
		return "", fmt.Errorf("build %s: no main package in %s (%v)", pkg, filepath.Join(root, pkg), err)
	}
	sum, err := contentHash(ctx, root, pkg)
	if err != nil {
		return "", err
	}
	name := filepath.Base(filepath.FromSlash(pkg))
	out := filepath.Join(outDir, name+"-"+sum[:16]+suffix)
	if _, err := os.Stat(out); err == nil {
		return out, nil
	}
	if err := os.MkdirAll(outDir, 0o755); err != nil {
		return "", err
	}
	tmp := out + ".tmp"
	if _, err := (shell.Cmd{Path: "go", Args: []string{"build", "-o", tmp, pkg}, Dir: root, Env: env}).Run(ctx); err != nil {
		return "", fmt.Errorf("build %s: %w", pkg, err)
	}
	return out, os.Rename(tmp, out)
}

// contentHash hashes go.mod, go.sum and every file of the module's packages pkg depends on, the
// api module's (a module of its own, replaced by ./api) included.
func contentHash(ctx context.Context, root, pkg string) (string, error) {
	out, err := (shell.Cmd{Path: "go", Dir: root, Args: []string{"list", "-deps",
		"-f", `{{if .Module}}{{if or (eq .Module.Path "` + Module + `") (eq .Module.Path "` + Module + `/api")}}{{.Dir}}{{range .GoFiles}} {{.}}{{end}}{{range .EmbedFiles}} {{.}}{{end}}{{end}}{{end}}`, pkg}}).Output(ctx)
	if err != nil {
		return "", fmt.Errorf("list the packages of %s: %w", pkg, err)
	}
	h := sha256.New()
	hashFile := func(p string) error {
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		fmt.Fprintf(h, "%s\n", p)
		_, err = io.Copy(h, f)
		return err
	}
	for _, f := range []string{"go.mod", "go.sum", "api/go.mod", "api/go.sum"} {
		if err := hashFile(filepath.Join(root, f)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return "", err
		}
	}
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		for _, f := range fields[1:] {
			if err := hashFile(filepath.Join(fields[0], f)); err != nil {
				return "", err
			}
		}
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
