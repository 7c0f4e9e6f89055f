package release

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// ManifestFile records what a release holds, for make publish and for scripts: the version,
// the commit, and where the image and the Flux artifact go.
const ManifestFile = "release.json"

// Manifest is the content of ManifestFile.
type Manifest struct {
	Version string `json:"version"`
	Commit  string `json:"commit,omitempty"`
	// Image is the operator image: its repository and the digest of its index.
	Image Artifact `json:"image"`
	// Gitops is the Flux OCI artifact of the gitops tree.
	Gitops Artifact `json:"gitops"`
}

// Artifact is one OCI artifact of a release.
type Artifact struct {
	Repository string `json:"repository"`
	Digest     string `json:"digest"`
}

// GitopsRepository is where the Flux artifact goes: beside the image, named gitops.
func GitopsRepository(imageRepository string) string {
	return imageRepository[:strings.LastIndex(imageRepository, "/")+1] + "gitops"
}

func (b *build) writeManifest(_ context.Context) (string, error) {
	data, err := json.MarshalIndent(Manifest{
		Version: b.Version, Commit: b.commit,
		Image:  Artifact{Repository: b.Repository, Digest: b.res.IndexDigest},
		Gitops: Artifact{Repository: GitopsRepository(b.Repository), Digest: b.res.GitopsDigest},
	}, "", "  ")
	if err != nil {
		return "", err
	}
	if err := os.WriteFile(filepath.Join(b.Dist, ManifestFile), append(data, '\n'), 0o644); err != nil {
		return "", err
	}
	return "image " + b.Repository + ", artifact " + GitopsRepository(b.Repository), nil
}

// PublishOptions say which release to push.
type PublishOptions struct {
	Dist string
	// Registry, when set, must be the host (and port) the release was built for: install.yaml
	// names the image there, so pushing elsewhere would leave it pointing at nothing.
	Registry string
	// Insecure pushes over plain HTTP (a registry on loopback or in a test bed).
	Insecure bool
	Out      io.Writer
}

// Publish checks the release's SHA256SUMS, then pushes the operator image index and the Flux
// artifact to the repositories the release was built for, tagged with its version. It pushes
// nothing when a checksum does not match. Credentials come from the Docker config
// (~/.docker/config.json), as with docker, crane and flux.
func Publish(ctx context.Context, o PublishOptions) error {
	out := o.Out
	if out == nil {
		out = io.Discard
	}
	if err := VerifySums(o.Dist); err != nil {
		return err
	}
	data, err := os.ReadFile(filepath.Join(o.Dist, ManifestFile))
	if err != nil {
		return fmt.Errorf("%s holds no release (make release VERSION=vX.Y.Z writes it): %w", o.Dist, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return fmt.Errorf("read %s: %w", ManifestFile, err)
	}
	if o.Registry != "" && !strings.HasPrefix(m.Image.Repository, strings.TrimSuffix(o.Registry, "/")+"/") {
		return fmt.Errorf("%s was built for %s, not for registry %s: install.yaml names the image there. Rebuild with make release VERSION=%s REGISTRY=%s",
			o.Dist, m.Image.Repository, o.Registry, m.Version, o.Registry)
	}
	var nameOpts []name.Option
	if o.Insecure {
		nameOpts = append(nameOpts, name.Insecure)
	}
	remoteOpts := []remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}

	// The image: the index the layout's index.json points to.
	idxTag, err := name.NewTag(m.Image.Repository+":"+m.Version, nameOpts...)
	if err != nil {
		return fmt.Errorf("image repository %q: %w", m.Image.Repository, err)
	}
	lp, err := layout.FromPath(filepath.Join(o.Dist, ImageDir))
	if err != nil {
		return err
	}
	top, err := lp.ImageIndex()
	if err != nil {
		return err
	}
	h, err := v1.NewHash(m.Image.Digest)
	if err != nil {
		return err
	}
	idx, err := top.ImageIndex(h)
	if err != nil {
		return fmt.Errorf("the image layout has no index %s: rebuild the release: %w", m.Image.Digest, err)
	}
	fmt.Fprintf(out, " • pushing %s (%s)…\n", idxTag, m.Image.Digest)
	if err := remote.WriteIndex(idxTag, idx, remoteOpts...); err != nil {
		return fmt.Errorf("push the operator image to %s: %w", idxTag, err)
	}
	fmt.Fprintf(out, " ✓ %s@%s\n", m.Image.Repository, m.Image.Digest)

	// The Flux artifact.
	artTag, err := name.NewTag(m.Gitops.Repository+":"+m.Version, nameOpts...)
	if err != nil {
		return fmt.Errorf("artifact repository %q: %w", m.Gitops.Repository, err)
	}
	gp, err := layout.FromPath(filepath.Join(o.Dist, GitopsArtifactDir))
	if err != nil {
		return err
	}
	gidx, err := gp.ImageIndex()
	if err != nil {
		return err
	}
	gh, err := v1.NewHash(m.Gitops.Digest)
	if err != nil {
		return err
	}
	art, err := gidx.Image(gh)
	if err != nil {
		return fmt.Errorf("the gitops layout has no artifact %s: rebuild the release: %w", m.Gitops.Digest, err)
	}
	fmt.Fprintf(out, " • pushing %s (%s)…\n", artTag, m.Gitops.Digest)
	if err := remote.Write(artTag, art, remoteOpts...); err != nil {
		return fmt.Errorf("push the gitops artifact to %s: %w", artTag, err)
	}
	fmt.Fprintf(out, " ✓ %s@%s\n", m.Gitops.Repository, m.Gitops.Digest)

	// The cosign signatures, when the release was built with SIGN_KEY.
	isSigned, err := signed(o.Dist)
	if err != nil || !isSigned {
		return err
	}
	for _, s := range []struct{ ref, prefix string }{
		{m.Image.Repository + "@" + m.Image.Digest, imageSignature},
		{m.Gitops.Repository + "@" + m.Gitops.Digest, gitopsSignature},
	} {
		ref, err := name.NewDigest(s.ref, nameOpts...)
		if err != nil {
			return err
		}
		fmt.Fprintf(out, " • attaching the cosign signature of %s…\n", ref)
		if err := attachSignature(o.Dist, s.prefix, ref, remoteOpts); err != nil {
			return err
		}
		fmt.Fprintf(out, " ✓ signed %s\n", ref)
	}
	return nil
}

// VerifySums checks every line of Dist's SHA256SUMS, as `sha256sum -c` does.
func VerifySums(dist string) error {
	f, err := os.Open(filepath.Join(dist, SumsFile))
	if err != nil {
		return fmt.Errorf("%s has no %s: run make release first: %w", dist, SumsFile, err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var n int
	for sc.Scan() {
		sum, file, ok := strings.Cut(sc.Text(), "  ")
		if !ok {
			return fmt.Errorf("%s: malformed line %q", SumsFile, sc.Text())
		}
		got, err := fileSHA256(filepath.Join(dist, filepath.FromSlash(file)))
		if err != nil {
			return fmt.Errorf("%s lists %s: %w", SumsFile, file, err)
		}
		if got != sum {
			return fmt.Errorf("%s: checksum mismatch (want %s, have %s): the release was changed after make release; rebuild it", file, sum, got)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s is empty", SumsFile)
	}
	return sc.Err()
}
