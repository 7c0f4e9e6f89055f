package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// KrewFile is the krew plugin manifest, in Dist: `kubectl krew install --manifest=krew-polykube.yaml
// --archive=polykube-status_linux_amd64.tar.gz` installs from the downloaded files, and the
// manifest's URIs name the release's assets on GitHub for an index.
const KrewFile = "krew-polykube.yaml"

// releaseDownload is where the hosted release workflow publishes the files of Dist.
const releaseDownload = "https://github.com/polykube/polykube/releases/download/"

// krewPlugin packs each polykube-status binary as kubectl-polykube with the licence (krew
// installs from archives only) and writes the plugin manifest naming them with their SHA-256.
func (b *build) krewPlugin(_ context.Context) (string, error) {
	licence, err := os.ReadFile(filepath.Join(b.RepoRoot, "LICENSE"))
	if err != nil {
		return "", fmt.Errorf("read LICENSE for the plugin archives: %w", err)
	}
	var platforms strings.Builder
	for _, p := range b.CLIPlatforms {
		if p.OS == "windows" {
			continue
		}
		bin, err := os.ReadFile(filepath.Join(b.Dist, fmt.Sprintf("polykube-status_%s_%s", p.OS, p.Arch)))
		if err != nil {
			return "", err
		}
		archive := fmt.Sprintf("kubectl-polykube_%s_%s.tar.gz", p.OS, p.Arch)
		data, err := b.tarGz(map[string][]byte{"kubectl-polykube": bin, "LICENSE": licence})
		if err != nil {
			return "", err
		}
		if err := os.WriteFile(filepath.Join(b.Dist, archive), data, 0o644); err != nil {
			return "", err
		}
		sum, err := fileSHA256(filepath.Join(b.Dist, archive))
		if err != nil {
			return "", err
		}
		fmt.Fprintf(&platforms, `  - selector:
      matchLabels:
        os: %s
        arch: %s
    uri: %s%s/%s
    sha256: %s
    bin: kubectl-polykube
    files:
      - from: kubectl-polykube
        to: .
      - from: LICENSE
        to: .
`, p.OS, p.Arch, releaseDownload, b.Version, archive, sum)
	}
	manifest := fmt.Sprintf(`apiVersion: krew.googlecontainers.github.com/v1alpha2
kind: Plugin
metadata:
  name: polykube
spec:
  version: %s
  homepage: https://github.com/polykube/polykube
  shortDescription: Read-only status of Polykube Workloads across clusters
  description: |
    Queries the named kubeconfig contexts in parallel, merges the status each cluster's
    Polykube operator wrote, and flags where the clusters disagree. It only reads.
    Run: kubectl polykube status --all-contexts
  platforms:
%s`, b.Version, platforms.String())
	if err := os.WriteFile(filepath.Join(b.Dist, KrewFile), []byte(manifest), 0o644); err != nil {
		return "", err
	}
	return fmt.Sprintf("%s and %d archives", KrewFile, strings.Count(platforms.String(), "selector:")), nil
}

// tarGz packs files (sorted by name) with the release's timestamp; binaries are executable.
// The chart and the krew archives use it.
func (b *build) tarGz(files map[string][]byte) ([]byte, error) {
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		mode := int64(0o644)
		if n == "kubectl-polykube" {
			mode = 0o755
		}
		if err := tw.WriteHeader(&tar.Header{Name: n, Mode: mode, Size: int64(len(files[n])), ModTime: b.epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := gz.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
