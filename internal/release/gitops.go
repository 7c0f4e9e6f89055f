package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	kyaml "sigs.k8s.io/kustomize/kyaml/yaml"
)

// The media types of `flux push artifact`, which source-controller's OCIRepository accepts.
// They are Flux's (fluxcd/pkg/oci), written here because that module needs Go 1.27 and this
// repository builds with Go 1.26.
const (
	FluxConfigMediaType  types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	FluxContentMediaType types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// GitopsArtifactDir is the Flux artifact as an OCI image layout, in Dist; make publish
	// pushes it.
	GitopsArtifactDir = "gitops-artifact"
)

// GitopsFile is the artifact's content for a version: what `flux build artifact` would write.
func GitopsFile(version string) string { return "gitops-" + version + ".tgz" }

// artifactTrees are the repository paths the artifact holds. gitops/operator refers to the
// generated CRDs and RBAC under operator/config, so those travel with it at the same relative
// paths: an OCIRepository's Kustomization then uses path ./gitops/operator as from Git.
var artifactTrees = []string{"gitops", "operator/config/crd", "operator/config/rbac"}

// gitopsArtifact writes the gitops tree as a Flux OCI artifact, with the operator image pinned
// to the release's digest in gitops/operator/kustomization.yaml.
func (b *build) gitopsArtifact(_ context.Context) (string, error) {
	content, n, err := gitopsTarball(b.RepoRoot, b.res.ImageRef, b.epoch)
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(b.Dist, GitopsFile(b.Version)), content, 0o644); err != nil {
		return "", err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(content)), nil
	}, tarball.WithMediaType(FluxContentMediaType))
	if err != nil {
		return "", err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, FluxConfigMediaType)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer})
	if err != nil {
		return "", err
	}
	revision := b.Version
	if b.commit != "" {
		revision += "@sha1:" + b.commit
	}
	img = mutate.Annotations(img, map[string]string{
		"org.opencontainers.image.source":   "https://github.com/polykube/polykube",
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.created":  b.epoch.Format("2006-01-02T15:04:05Z"),
	}).(v1.Image)
	lp, err := layout.Write(filepath.Join(b.Dist, GitopsArtifactDir), empty.Index)
	if err != nil {
		return "", err
	}
	if err := lp.AppendImage(img, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": b.Version,
	})); err != nil {
		return "", err
	}
	digest, err := img.Digest()
	if err != nil {
		return "", err
	}
	b.res.GitopsDigest = digest.String()
	return fmt.Sprintf("%d files, artifact %s", n, digest), nil
}

// gitopsTarball is a reproducible tar.gz of artifactTrees (Go files left out), with the image
// of gitops/operator set to ref.
func gitopsTarball(repoRoot, ref string, mtime time.Time) ([]byte, int, error) {
	var files []string
	for _, tree := range artifactTrees {
		err := filepath.WalkDir(filepath.Join(repoRoot, tree), func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || strings.HasSuffix(path, ".go") {
				return err
			}
			rel, err := filepath.Rel(repoRoot, path)
			files = append(files, filepath.ToSlash(rel))
			return err
		})
		if err != nil {
			return nil, 0, err
		}
	}
	slices.Sort(files)
	var buf bytes.Buffer
	gz := gzip.NewWriter(&buf)
	tw := tar.NewWriter(gz)
	var pinned bool
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(repoRoot, filepath.FromSlash(f)))
		if err != nil {
			return nil, 0, err
		}
		if f == "gitops/operator/kustomization.yaml" {
			if data, err = pinImage(data, ref); err != nil {
				return nil, 0, fmt.Errorf("%s: %w", f, err)
			}
			pinned = true
		}
		if err := tw.WriteHeader(&tar.Header{Name: f, Mode: 0o644, Size: int64(len(data)), ModTime: mtime, Typeflag: tar.TypeReg, Format: tar.FormatPAX}); err != nil {
			return nil, 0, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, 0, err
		}
	}
	if !pinned {
		return nil, 0, fmt.Errorf("gitops/operator/kustomization.yaml is missing: the artifact would run no pinned image")
	}
	if err := tw.Close(); err != nil {
		return nil, 0, err
	}
	if err := gz.Close(); err != nil {
		return nil, 0, err
	}
	return buf.Bytes(), len(files), nil
}

// pinImage sets the kustomization's operator image to ref (repository@digest), keeping its
// comments.
func pinImage(data []byte, ref string) ([]byte, error) {
	name, digest, ok := strings.Cut(ref, "@")
	if !ok {
		return nil, fmt.Errorf("image %q is not a digest reference", ref)
	}
	node, err := kyaml.Parse(string(data))
	if err != nil {
		return nil, err
	}
	images, err := kyaml.Parse(fmt.Sprintf("- name: %s\n  newName: %s\n  digest: %s\n", baseImage, name, digest))
	if err != nil {
		return nil, err
	}
	if err := node.PipeE(kyaml.SetField("images", images)); err != nil {
		return nil, err
	}
	out, err := node.String()
	return []byte(out), err
}
