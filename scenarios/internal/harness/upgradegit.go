package harness

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/polykube/polykube/internal/release"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// Where the operators run in the clusters (kind, k0s), the upgrade scenario moves them as a
// user's Git does: the previous release's operator base (gitops/operator and operator/config of
// the commit release/PREVIOUS names, its own CRDs, RBAC and Deployment) sits in a directory of
// the repository beside operator/, its image (the previous release's operator binary, built
// from that commit, as a release image holds it) in the run's registry; each cluster's
// clusters/<name>/operator/kustomization.yaml names one of the two, and moving a cluster is a
// commit of that one file, which the cluster's Flux applies as a rollout of the operator's
// Deployment.

// previousReleaseDir is the previous release's directory in the repository.
const previousReleaseDir = "operator-previous"

// gitOperators is what the Git path of the upgrade knows of each release.
type gitOperators struct {
	dir   map[string]string // by VersionPrevious, VersionThis: the release directory
	image map[string]string // the image the release's Deployment names
}

// previousInGit publishes the previous release's operator image to the run's registry and
// commits its operator base beside operator/, and returns the releases' directories and
// images; thisImage is the image the clusters' operators run now.
func (sc *Scenario) previousInGit(ctx context.Context, bin, version, thisImage string) (*gitOperators, error) {
	addr, err := sc.registryAddr()
	if err != nil {
		return nil, fmt.Errorf("the upgrade scenario publishes the previous release's image to the test bed's registry: %w", err)
	}
	root, err := repoRoot(ctx)
	if err != nil {
		return nil, err
	}
	prev, err := release.ReadPrevious(root)
	if err != nil {
		return nil, err
	}
	img, err := release.BinaryImage(bin, release.Platform{OS: "linux", Arch: runtime.GOARCH}, version, prev.Commit, time.Unix(0, 0).UTC())
	if err != nil {
		return nil, fmt.Errorf("the previous release's image from %s: %w", bin, err)
	}
	repo := addr + "/polykube/operator-previous"
	tag, err := name.NewTag(repo+":"+version, name.Insecure)
	if err != nil {
		return nil, err
	}
	if err := remote.Write(tag, img, remote.WithContext(ctx)); err != nil {
		return nil, fmt.Errorf("push the previous release's image to %s: %w", tag, err)
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, err
	}
	image := repo + "@" + digest.String()

	var files map[string][]byte
	if _, err := release.InPreviousWorktree(ctx, root, io.Discard, func(prev release.Previous, src string) error {
		var err error
		files, err = datapath.OperatorRelease(filepath.Join(src, "gitops", "operator"), image)
		if err != nil {
			return fmt.Errorf("the operator base of the previous release (commit %s): %w", prev.Commit, err)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	put := map[string][]byte{}
	for f, data := range files {
		put[path.Join(previousReleaseDir, f)] = data
	}
	if _, err := sc.Fed.Git().Commit(ctx, fmt.Sprintf("the operator of the previous release %s (commit %.12s), beside this one", version, prev.Commit), put, nil); err != nil {
		return nil, err
	}
	return &gitOperators{
		dir:   map[string]string{VersionPrevious: previousReleaseDir, VersionThis: gitrepo.OperatorDir},
		image: map[string]string{VersionPrevious: image, VersionThis: thisImage},
	}, nil
}

// releaseWords names a release as the scenarios do: "this" or "the previous".
func releaseWords(which string) string {
	if which == VersionPrevious {
		return "the previous"
	}
	return "this"
}

// moveInGit commits the cluster's operator kustomization naming the release which, then waits
// until the operator Deployment has rolled out with that release's image.
func (sc *Scenario) moveInGit(ctx context.Context, g *gitOperators, cluster, which string) error {
	file := datapath.ClusterOperatorPath(cluster) + "/kustomization.yaml"
	if _, err := sc.Fed.Git().Commit(ctx, fmt.Sprintf("cluster %s runs the operator of %s release (%s)", cluster, releaseWords(which), g.dir[which]),
		map[string][]byte{file: datapath.ClusterOperatorKustomization(cluster, g.dir[which])}, nil); err != nil {
		return fmt.Errorf("move cluster %q to the %s operator in Git: %w", cluster, which, err)
	}
	_, digest, _ := strings.Cut(g.image[which], "@")
	return sc.awaitOperatorRollout(ctx, WaitDelivery, cluster, digest)
}

// restoreOperatorsInGit moves every cluster back to this tree's operator in one commit, removes
// the previous release's directory, and waits until every cluster's operator rolled out again
// and reports version.
func (sc *Scenario) restoreOperatorsInGit(ctx context.Context, g *gitOperators, version string) error {
	put := map[string][]byte{}
	for _, cl := range sc.Fed.Clusters() {
		put[datapath.ClusterOperatorPath(cl)+"/kustomization.yaml"] = datapath.ClusterOperatorKustomization(cl, g.dir[VersionThis])
	}
	if _, err := sc.Fed.Git().Commit(ctx, "every cluster runs this tree's operator again", put, []string{previousReleaseDir}); err != nil {
		return err
	}
	_, digest, _ := strings.Cut(g.image[VersionThis], "@")
	var errs []error
	for _, cl := range sc.Fed.Clusters() {
		if err := sc.awaitOperatorRollout(ctx, WaitCleanup, cl, digest); err != nil {
			errs = append(errs, err)
			continue
		}
		// The next scenario reads this tree's version from the ClusterMember: it must be the
		// new leader's, not the previous release's left behind.
		errs = append(errs, sc.AwaitOperatorVersion(ctx, cl, version))
	}
	return errors.Join(errs...)
}
