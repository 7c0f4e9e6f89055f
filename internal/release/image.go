package release

import (
	"archive/tar"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// ImageDir is the OCI image layout of the operator image, in Dist.
	ImageDir = "operator-image"
	// SBOMFile is the image's SPDX SBOM, in Dist.
	SBOMFile = "operator-image.spdx.json"
	// entrypoint is where the operator binary sits in the image (as in the repository's
	// Dockerfile, which the test bed's kind images are built from).
	entrypoint = "/polykube-operator"
	// NonRootUser is the image's user: the "nonroot" UID and GID of distroless images, which
	// the Deployment's securityContext (runAsUser 65532) also names.
	NonRootUser = "65532:65532"
)

// operatorImage builds the static operator binary for every image platform, wraps each in a
// one-layer image on an empty base, and writes an OCI image layout whose index.json points to
// one image index holding them all. It writes the SBOM from the first platform's binary.
func (b *build) operatorImage(ctx context.Context) (string, error) {
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	var sbomBinary string
	var size int64
	for _, p := range b.ImagePlatforms {
		bin := filepath.Join(b.tmp, "polykube-operator_"+p.OS+"_"+p.Arch)
		fmt.Fprintf(b.out, "   building the operator for %s\n", p)
		if err := b.goBuild(ctx, "./operator", p, bin); err != nil {
			return "", err
		}
		if sbomBinary == "" {
			sbomBinary = bin
		}
		img, err := b.platformImage(bin, p)
		if err != nil {
			return "", fmt.Errorf("image for %s: %w", p, err)
		}
		layers, err := img.Layers()
		if err != nil {
			return "", err
		}
		for _, l := range layers {
			n, err := l.Size()
			if err != nil {
				return "", err
			}
			size += n
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{
			Add:        img,
			Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: p.OS, Architecture: p.Arch}},
		})
	}
	digest, err := idx.Digest()
	if err != nil {
		return "", err
	}
	lp, err := layout.Write(filepath.Join(b.Dist, ImageDir), empty.Index)
	if err != nil {
		return "", fmt.Errorf("create the OCI layout: %w", err)
	}
	if err := lp.AppendIndex(idx, layout.WithAnnotations(map[string]string{
		"org.opencontainers.image.ref.name": b.Version,
	})); err != nil {
		return "", fmt.Errorf("write the image index into the OCI layout: %w", err)
	}
	b.res.IndexDigest = digest.String()
	b.res.ImageRef = b.Repository + "@" + digest.String()

	if err := b.writeSBOM(sbomBinary); err != nil {
		return "", fmt.Errorf("SBOM: %w", err)
	}
	return fmt.Sprintf("index %s (%s), %.1f MB compressed", digest, join(b.ImagePlatforms, ", "), float64(size)/1e6), nil
}

// platformImage is the operator binary alone on an empty base: no shell, no package manager,
// nothing to patch but the binary.
func (b *build) platformImage(bin string, p Platform) (v1.Image, error) {
	return BinaryImage(bin, p, b.Version, b.commit, b.epoch)
}

// BinaryImage is an operator binary alone on an empty base, as a release's image holds it
// (entrypoint, non-root user, labels), stamped with version, commit and epoch. The release
// builds its own with it; the test bed wraps the previous release's operator, built from its
// commit (PreviousOperator), to run it in a cluster.
func BinaryImage(bin string, p Platform, version, commit string, epoch time.Time) (v1.Image, error) {
	layerTar, err := binaryLayer(bin, epoch)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.ConfigFile(img, &v1.ConfigFile{
		OS:           p.OS,
		Architecture: p.Arch,
		Config: v1.Config{
			Entrypoint: []string{entrypoint},
			User:       NonRootUser,
			WorkingDir: "/",
			Labels: map[string]string{
				"org.opencontainers.image.title":    "polykube-operator",
				"org.opencontainers.image.version":  version,
				"org.opencontainers.image.revision": commit,
				"org.opencontainers.image.source":   "https://github.com/polykube/polykube",
				"org.opencontainers.image.licenses": "Apache-2.0",
			},
		},
	})
	if err != nil {
		return nil, err
	}
	img, err = mutate.Append(img, mutate.Addendum{
		Layer:   layer,
		History: v1.History{CreatedBy: "polykube-release: " + strings.TrimPrefix(entrypoint, "/") + " " + version, Created: v1.Time{Time: epoch}},
	})
	if err != nil {
		return nil, err
	}
	return mutate.CreatedAt(img, v1.Time{Time: epoch})
}

// binaryLayer is a tar holding the binary at the entrypoint, owned by root and not writable,
// with the release's timestamp so that the layer's digest depends on the binary only.
func binaryLayer(bin string, epoch time.Time) ([]byte, error) {
	data, err := os.ReadFile(bin)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	if err := tw.WriteHeader(&tar.Header{
		Name: strings.TrimPrefix(entrypoint, "/"), Mode: 0o555, Size: int64(len(data)),
		ModTime: epoch, Typeflag: tar.TypeReg, Format: tar.FormatPAX,
	}); err != nil {
		return nil, err
	}
	if _, err := tw.Write(data); err != nil {
		return nil, err
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
