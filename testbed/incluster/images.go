package incluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

func (b *Bed) imageArchive() string { return filepath.Join(b.opts.Dir, "polykube-image.tar") }

// buildImage builds the Polykube image: from the Dockerfile with upstream images (it pulls a Go
// base image), from binaries compiled here with local ones.
func (b *Bed) buildImage(ctx context.Context) error {
	if b.state.Topology.Images == datapath.ImagesLocal {
		return datapath.BuildPolykubeImage(ctx, b.env.Runner, b.opts.SourceDir)
	}
	return datapath.BuildImage(ctx, b.env, b.opts.SourceDir)
}

// loadImages loads the Polykube image (and, with local images, Cilium's) into every node, as
// `kind load docker-image` does: one archive, imported into each node's containerd.
func (b *Bed) loadImages(ctx context.Context) error {
	l, ok := b.prov.(datapath.ImageLoader)
	if !ok {
		return fmt.Errorf("provider %s cannot load images into its nodes (%w): the clusters must have or pull %s themselves", b.prov.Name(), provider.ErrNotSupported, strings.Join(b.imageRefs(), ", "))
	}
	refs := b.imageRefs()
	if len(refs) == 0 {
		return nil
	}
	archive := b.imageArchive()
	if _, err := b.env.Runner.Run(ctx, execx.Command("docker", append([]string{"save", "--output", archive}, refs...)...)); err != nil {
		return fmt.Errorf("save %s: %w", strings.Join(refs, ", "), err)
	}
	defer os.Remove(archive)
	return datapath.LoadImage(ctx, b.env, l, archive)
}

// imageRefs are the images the nodes need that the bed provides: the Polykube image and, with
// local images, Cilium's (in clusters the bed created) and Flux's. With the registry add-on the
// nodes pull the Polykube image from the registry instead.
func (b *Bed) imageRefs() []string {
	var refs []string
	if !b.usesRegistry() {
		refs = append(refs, datapath.Image)
	}
	if b.state.Topology.Images == datapath.ImagesLocal {
		if b.ownsClusters() {
			refs = append(refs, datapath.LocalCiliumImages().List()...)
		}
		if slices.Contains(b.state.Topology.Addons, topology.AddonFlux) {
			refs = append(refs, datapath.LocalFluxImages().List()...)
		}
	}
	return refs
}

// checkNothingPulled fails when any kubelet reported pulling an image: with local images every
// image must have been in the node already.
func (b *Bed) checkNothingPulled(ctx context.Context) error {
	but := ""
	if b.usesRegistry() {
		but = " but from the run's registry"
	}
	if !b.env.Runner.Note("list the Events of every cluster and fail on any \"Pulling\" (kubelet pulls an image)%s", but) {
		return nil
	}
	pulled, err := datapath.PulledImages(ctx, b.env)
	if err != nil {
		return err
	}
	var lines []string
	for _, m := range b.env.Members {
		for _, p := range pulled[m.Name] {
			if !b.fromRegistry(p) {
				lines = append(lines, m.Name+": "+p)
			}
		}
	}
	if len(lines) > 0 {
		return fmt.Errorf("with local images nothing may be pulled but from the run's registry, but kubelet pulled:\n  %s", strings.Join(lines, "\n  "))
	}
	fmt.Fprintf(b.opts.Log, "   no kubelet of %d clusters reported pulling an image\n", len(b.env.Members))
	return nil
}
