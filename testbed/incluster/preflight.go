package incluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/topology"
)

// requirements are what the host needs for this run.
func (b *Bed) requirements() datapath.Requirements {
	// Cilium is installed with the Helm SDK: no cilium CLI. With upstream images Flux is
	// installed with the flux CLI (`flux install`), when the topology lists it; with local
	// images from the test bed's own manifests.
	req := datapath.Requirements{}
	if slices.Contains(b.state.Topology.Addons, topology.AddonFlux) && b.state.Topology.Images != datapath.ImagesLocal {
		req.Tools = append(req.Tools, datapath.FluxCLI)
	}
	// Docker builds the image either way; it also runs the nodes unless k0s is on SSH hosts.
	req.Docker = true
	switch {
	case b.dockerNetwork() != "":
		req.Clusters = len(b.state.Topology.Clusters)
	case b.ownsClusters():
		req.Tools = append(req.Tools, datapath.K0sctlCLI) // k0s on SSH hosts
	}
	return req
}

// host is what the in-cluster bed needs to know of this machine.
type host struct {
	// cgroupV1: Docker runs containers on cgroup v1 (or a hybrid hierarchy).
	cgroupV1 bool
	// missingCaps are capabilities not in this process's bounding set (so not in the nodes').
	missingCaps []string
}

func hostFacts(r execx.Runner) host {
	var h host
	if out, err := r.Run(context.Background(), execx.Command("docker", "info", "--format", "{{.CgroupVersion}}")); err == nil {
		h.cgroupV1 = strings.TrimSpace(string(out)) == "1"
	}
	if !r.DryRun() {
		h.missingCaps = datapath.MissingCapabilities()
	}
	return h
}

func (b *Bed) preflight(ctx context.Context) error {
	req := b.requirements()
	if b.opts.DryRun {
		var checks []string
		if req.Docker {
			checks = append(checks, "docker reachable")
		}
		if req.Clusters > 0 {
			checks = append(checks, fmt.Sprintf("memory for %d clusters", req.Clusters),
				fmt.Sprintf("fs.inotify.max_user_watches >= %d", datapath.MinInotifyWatches),
				fmt.Sprintf("fs.inotify.max_user_instances >= %d", datapath.MinInotifyInstances))
		}
		for _, t := range req.Tools {
			checks = append(checks, fmt.Sprintf("%s >= %s (tested with %s)", t.Name, t.Minimum, t.Pinned))
		}
		b.env.Runner.Note("check %s", strings.Join(checks, "; "))
		return nil
	}
	r := datapath.Preflight(ctx, datapath.LocalHost(execx.Exec{}), req)
	r.Print(b.opts.Log)
	if err := r.Err(); err != nil {
		return err
	}
	if b.state.Topology.Images != datapath.ImagesLocal {
		return nil
	}
	needed := []string{"cilium", "polykube"}
	if li, ok := datapath.LocalNodeImageOf(b.state.Topology.Provider); ok && b.dockerNetwork() != "" {
		needed = append([]string{li.Name}, needed...)
	}
	if slices.Contains(b.state.Topology.Addons, topology.AddonFlux) {
		needed = append(needed, "flux")
	}
	missing, err := datapath.MissingLocalImages(ctx, needed...)
	if err != nil {
		return err
	}
	if len(missing) > 0 {
		return fmt.Errorf("images: local, but Docker has no %s: build them with `polykube-testbed images build` (make images; minutes on a first run)",
			strings.Join(missing, ", "))
	}
	fmt.Fprintf(b.opts.Log, "   local images: %s present in Docker\n", strings.Join(needed, ", "))
	return nil
}
