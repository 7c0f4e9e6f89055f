package incluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/pipeline"
	"github.com/polykube/polykube/testbed/topology"
)

// Up brings the run up. On failure (or Ctrl-C) it deletes what it created unless Retain.
func (b *Bed) Up(ctx context.Context) (err error) {
	e := b.env
	top := b.state.Topology
	var with []string
	switch {
	case !b.ownsClusters():
		// Their own network: nothing of Cilium's is installed.
	case len(top.Clusters) > 1:
		with = append(with, "Cilium ClusterMesh")
	default:
		with = append(with, "Cilium")
	}
	if slices.Contains(top.Addons, topology.AddonFlux) {
		with = append(with, "Flux")
	}
	if slices.Contains(top.Addons, topology.AddonOperator) {
		with = append(with, "the Polykube operator")
	}
	list := strings.Join(with, ", ")
	if n := len(with); n > 1 {
		list = strings.Join(with[:n-1], ", ") + " and " + with[n-1]
	}
	if list == "" {
		list = "nothing but their own"
	}
	fmt.Fprintf(b.opts.Log, "Bringing up %q: %d %s clusters with %s\n", top.Name, len(top.Clusters), top.Provider, list)
	if _, ok := b.prov.(datapath.ImageLoader); !ok {
		fmt.Fprintf(b.opts.Log, "Provider %s cannot load images into its nodes: the clusters must have or pull %s themselves\n", top.Provider, strings.Join(b.imageRefs(), ", "))
	}
	defer func() {
		if err == nil || b.opts.DryRun {
			return
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
		defer cancel()
		// The diagnostics first: once the clusters are deleted there is nothing to read, and CI
		// artifacts would be empty.
		diag := filepath.Join(b.diagnosticsRoot(), "up-failed-"+time.Now().Format("20060102-150405"))
		if derr := b.Diagnose(dctx, diag); derr != nil {
			fmt.Fprintf(b.opts.Log, "Diagnostics of the failure (partly: %v) in %s\n", derr, diag)
		} else {
			fmt.Fprintf(b.opts.Log, "Diagnostics of the failure in %s\n", diag)
		}
		if b.opts.Retain {
			fmt.Fprintf(b.opts.Log, "Keeping what was created for debugging (--retain); remove it with `polykube-testbed down --provider %s`.\n", top.Provider)
			return
		}
		fmt.Fprintln(b.opts.Log, "Up failed; deleting what it created (use --retain to keep it).")
		if derr := b.Down(dctx); derr != nil {
			err = errors.Join(err, fmt.Errorf("clean up after the failure: %w", derr))
		}
	}()
	if err := e.Steps().Run(b.actions(ctx)); err != nil {
		return err
	}
	return b.saveState()
}

// actions are the steps of Up, in order, as kind's create pipeline is a list of actions: the
// clusters, the images in their nodes, the CNI and its checks, then the add-ons the topology
// lists (git, flux, operator).
func (b *Bed) actions(ctx context.Context) []pipeline.Action {
	e := b.env
	top := b.state.Topology
	has := func(a string) bool { return slices.Contains(top.Addons, a) }
	local := top.Images == datapath.ImagesLocal
	// Clusters the bed was given keep their own network and get their images themselves.
	owned := b.ownsClusters()
	_, canLoad := b.prov.(datapath.ImageLoader)
	images := "upstream images"
	if local {
		images = "images built here"
	}
	createWhat := fmt.Sprintf("Creating %d %s clusters (%s)", len(top.Clusters), top.Provider, images)
	if !owned {
		createWhat = fmt.Sprintf("Checking that the %d %s clusters answer (%s)", len(top.Clusters), top.Provider, images)
	}
	return []pipeline.Action{
		{What: "Checking the host", Run: func() error { return b.preflight(ctx) }},
		{What: createWhat, Run: func() error { return b.createClusters(ctx) }},
		{What: "Checking that the clusters have no Flux or Polykube of their own", Run: func() error { return b.checkNothingInstalled(ctx) }, Skip: owned},
		{What: "Building the Polykube image " + datapath.Image, Run: func() error { return b.buildImage(ctx) }},
		{What: "Loading images into every node", Run: func() error { return b.loadImages(ctx) }, Skip: !canLoad},
		{What: "Starting the registry, pointing every node's containerd at it and pushing the Polykube image", Run: func() error { return b.upRegistry(ctx) }, Skip: !b.usesRegistry()},
		{What: "Starting the WireGuard overlay on every node (network: isolated)", Run: func() error { return b.startOverlay(ctx) }, Skip: !top.Isolated()},
		{What: "Installing Cilium " + datapath.CiliumVersion + " with Helm", Run: func() error {
			opts, err := b.ciliumOptions(ctx)
			if err != nil {
				return err
			}
			return datapath.InstallCilium(ctx, e, opts)
		}, Skip: !owned},
		{What: "Waiting for Cilium, the nodes and CoreDNS", Run: func() error { return datapath.WaitCilium(ctx, e) }, Skip: !owned},
		{What: "Checking pod-to-Service traffic in every cluster", Run: func() error { return datapath.CheckServices(ctx, e) }},
		{What: "Waiting for Cilium ClusterMesh", Run: func() error { return datapath.MeshStatus(ctx, e) }, Skip: !owned || len(e.Members) < 2},
		{What: "Starting the Git server", Run: func() error { return b.upGit(ctx) }, Skip: !has(topology.AddonGit)},
		{What: "Checking that a pod reaches the Git server", Run: func() error { return datapath.CheckGitReachable(ctx, e, b.GitURL()) },
			Skip: !has(topology.AddonGit) || !has(topology.AddonFlux)},
		{What: "Installing Flux", Run: func() error { return b.upFlux(ctx) }, Skip: !has(topology.AddonFlux)},
		{What: "Waiting for the operators", Run: func() error { return b.waitOperators(ctx) }, Skip: !has(topology.AddonOperator)},
		{What: "Checking that nothing was pulled", Run: func() error { return b.checkNothingPulled(ctx) }, Skip: !local},
		{What: "Checking that every node pulled the Polykube image from the registry", Run: func() error { return b.checkPulledFromRegistry(ctx) }, Skip: !b.usesRegistry() || !has(topology.AddonOperator)},
		{What: "Recording the run", Run: b.saveState},
	}
}

// diagnosticsRoot is where a failed run leaves its diagnostics: $ARTIFACTS (CI) when set, else
// beside the run's directory (which Down removes).
func (b *Bed) diagnosticsRoot() string {
	if a := os.Getenv("ARTIFACTS"); a != "" {
		return filepath.Join(a, "datapath")
	}
	return filepath.Dir(b.opts.Dir)
}
