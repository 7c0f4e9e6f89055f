package release

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// SumsFile lists the SHA-256 of every other file of the release, in the format of sha256sum:
// `cd dist && sha256sum -c SHA256SUMS` verifies a download.
const SumsFile = "SHA256SUMS"

func (b *build) checksums(_ context.Context) (string, error) {
	var files []string
	err := filepath.WalkDir(b.Dist, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(b.Dist, path)
		if err != nil {
			return err
		}
		if rel == SumsFile || rel == marker {
			return nil
		}
		files = append(files, filepath.ToSlash(rel))
		return nil
	})
	if err != nil {
		return "", err
	}
	slices.Sort(files)
	var sb strings.Builder
	for _, f := range files {
		sum, err := fileSHA256(filepath.Join(b.Dist, f))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&sb, "%s  %s\n", sum, f)
	}
	if err := os.WriteFile(filepath.Join(b.Dist, SumsFile), []byte(sb.String()), 0o644); err != nil {
		return "", err
	}
	b.res.Files = append(files, SumsFile)
	return fmt.Sprintf("%d files", len(files)), nil
}

func fileSHA256(path string) (string, error) {
	f, err := os.Open(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}
