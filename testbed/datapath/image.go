package datapath

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/polykube/polykube/testbed/internal/execx"
)

// Image is the image the test bed builds from the repository's Dockerfile and loads into
// every node: the operator (/polykube-operator) and the routing probe's echo server and
// client (/polykube-echo). Nothing pulls it: Deployments use it with IfNotPresent.
const Image = "polykube.local/polykube:e2e"

// ImageLoader loads an image archive into every node of a cluster (the kind and k0s
// providers).
type ImageLoader interface {
	LoadImageArchive(ctx context.Context, cluster, archive string) error
}

// BuildImage builds Image from the Dockerfile at the root of the checkout srcDir (the load
// step saves it, with any other image the nodes need, into one archive).
func BuildImage(ctx context.Context, e *Env, srcDir string) error {
	if _, err := e.Runner.Run(ctx, execx.Command("docker", "build", "--tag", Image, "--file", filepath.Join(srcDir, "Dockerfile"), srcDir)); err != nil {
		return fmt.Errorf("build %s from %s: %w (docker build's output above says which step failed)", Image, filepath.Join(srcDir, "Dockerfile"), err)
	}
	return nil
}

// LoadImage loads the archive into every node of every member, the members at once (the
// import is mostly disk and hashing, so clusters need not wait for each other).
func LoadImage(ctx context.Context, e *Env, l ImageLoader, archive string) error {
	return e.EachMember(func(m Member) error { return l.LoadImageArchive(ctx, m.Name, archive) })
}
