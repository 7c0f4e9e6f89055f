package datapath

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/topology"
)

// The image sources of the in-cluster bed (topology.Images): ImagesUpstream runs the images
// as their projects publish them (kindest/node, quay.io's Cilium, ghcr.io's Flux), pulled by the
// nodes, which is what online users get; ImagesLocal runs only images built on this machine from
// Go module and Debian sources (`polykube-testbed images build`), with nothing pulled, which is
// what machines without a registry (these, airgapped users) need.
const (
	ImagesUpstream = topology.ImagesUpstream
	ImagesLocal    = topology.ImagesLocal
)

// LocalNodeImage is the kind node image scripts/images/kind-node.sh builds.
func LocalNodeImage() string { return "polykube.local/kind-node:" + toolchain.KubernetesVersion }

// LocalK0sNodeImage is the k0s node image scripts/images/k0s-node.sh builds (the tag writes
// the '+' of the k0s version as '-', as k0s's own image tags do).
func LocalK0sNodeImage() string {
	return "polykube.local/k0s-node:" + strings.ReplaceAll(K0sVersion, "+", "-")
}

// The images k0s runs as pods that the k0s node image carries (the ones kind-node.sh builds:
// pause as kind v0.33.0's containerd configuration names it, CoreDNS and kube-proxy).
var (
	LocalPauseImage     = "registry.k8s.io/pause:3.10"
	LocalCoreDNSImage   = "registry.k8s.io/coredns/coredns:" + toolchain.CoreDNSVersion
	LocalKubeProxyImage = "registry.k8s.io/kube-proxy:" + toolchain.KubernetesVersion
)

// LocalNodeImageOf is the local image that is the nodes of a provider's clusters (kind-node
// for kind, k0s-node for k0s); false when the provider's nodes are not an image of the factory.
func LocalNodeImageOf(provider string) (LocalImage, bool) {
	for _, li := range LocalImages() {
		if li.NodeOf == provider {
			return li, true
		}
	}
	return LocalImage{}, false
}

// LocalImage is one image the factory builds.
type LocalImage struct {
	// Name is the factory's name for it (`images build NAME`).
	Name string
	// Refs are the image references it produces.
	Refs []string
	// Script is the repository's build recipe for it, relative to the checkout; "" means it is
	// built in Go (the Polykube image).
	Script string
	// What says what it is, for `images list`.
	What string
	// NodeOf is the provider whose nodes the image is, if it is a node image.
	NodeOf string
	// OnlyNamed images are built only when named (`images build k0s-node`), not by a build of
	// all: they need what not every machine has (k0s's source or binary).
	OnlyNamed bool
}

// LocalImages are the images of the in-cluster bed's local mode, in build order.
func LocalImages() []LocalImage {
	c := LocalCiliumImages()
	return []LocalImage{
		{Name: "kind-node", Refs: []string{LocalNodeImage()}, Script: "scripts/images/kind-node.sh", NodeOf: topology.ProviderKind,
			What: "kind node: Debian bookworm, kind's base files, Kubernetes " + toolchain.KubernetesVersion + " with its control-plane, kube-proxy, CoreDNS and pause images pre-loaded, and crictl"},
		{Name: "k0s-node", Refs: []string{LocalK0sNodeImage()}, Script: "scripts/images/k0s-node.sh", NodeOf: topology.ProviderK0s, OnlyNamed: true,
			What: "k0s node: k0s " + K0sVersion + " built without embedded binaries (POLYKUBE_K0S_SRC or POLYKUBE_K0S_BIN), on the kind node's root file system, with the toolchain's control plane, kubelet and containerd " + toolchain.ContainerdVersion + "; built only when named"},
		{Name: "cilium", Refs: c.List(), Script: "scripts/images/cilium.sh",
			What: "Cilium " + toolchain.CiliumVersion + ": agent (with clang-19 and the BPF sources), operator-generic, clustermesh-apiserver"},
		{Name: "flux", Refs: LocalFluxImages().List(),
			What: "Flux source-controller " + toolchain.FluxSourceControllerVersion + " and kustomize-controller " + toolchain.FluxKustomizeControllerVersion + " (the hermetic tier's binaries), FROM scratch"},
		{Name: "polykube", Refs: []string{Image},
			What: "Polykube: the operator and the routing probe's echo server, FROM scratch"},
	}
}

// ImageStatus is whether an image is in the local Docker daemon.
type ImageStatus struct {
	Ref     string
	Present bool
	Size    int64
	Created time.Time
}

// InspectImages asks Docker about each reference.
func InspectImages(ctx context.Context, refs []string) ([]ImageStatus, error) {
	out := make([]ImageStatus, len(refs))
	for i, ref := range refs {
		out[i].Ref = ref
		b, err := exec.CommandContext(ctx, "docker", "image", "inspect", "--format", "{{.Size}} {{.Created}}", ref).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) && strings.Contains(string(ee.Stderr), "No such image") {
				continue
			}
			return nil, fmt.Errorf("docker image inspect %s: %w (is Docker running? make host-docker)", ref, err)
		}
		var created string
		if _, err := fmt.Sscanf(strings.TrimSpace(string(b)), "%d %s", &out[i].Size, &created); err == nil {
			out[i].Present = true
			out[i].Created, _ = time.Parse(time.RFC3339Nano, created)
		}
	}
	return out, nil
}

// MissingLocalImages are the references of the named LocalImages (all when none is named)
// that Docker does not have.
func MissingLocalImages(ctx context.Context, names ...string) ([]string, error) {
	var refs []string
	for _, li := range LocalImages() {
		if len(names) == 0 || slices.Contains(names, li.Name) {
			refs = append(refs, li.Refs...)
		}
	}
	st, err := InspectImages(ctx, refs)
	if err != nil {
		return nil, err
	}
	var missing []string
	for _, s := range st {
		if !s.Present {
			missing = append(missing, s.Ref)
		}
	}
	return missing, nil
}

// BuildLocalImages builds the named local images (all when none is named) from the checkout
// srcDir, in LocalImages order, each between status lines. The recipes keep their own caches
// (root file systems, toolchain binaries) under the toolchain's cache directory, so a second
// build takes seconds.
func BuildLocalImages(ctx context.Context, srcDir string, out io.Writer, names ...string) error {
	all := LocalImages()
	want := map[string]bool{}
	for _, n := range names {
		found := false
		for _, li := range all {
			found = found || li.Name == n
		}
		if !found {
			known := make([]string, len(all))
			for i, li := range all {
				known[i] = li.Name
			}
			return fmt.Errorf("no local image %q: the factory builds %s", n, strings.Join(known, ", "))
		}
		want[n] = true
	}
	for _, li := range all {
		if len(want) > 0 && !want[li.Name] || len(want) == 0 && li.OnlyNamed {
			continue
		}
		fmt.Fprintf(out, "• building image %s: %s\n", li.Name, li.What)
		start := time.Now()
		var err error
		switch {
		case li.Name == "flux":
			err = BuildFluxImages(ctx, execx.Exec{Log: out})
		case li.Script == "":
			err = BuildPolykubeImage(ctx, execx.Exec{Log: out}, srcDir)
		default:
			cmd := exec.CommandContext(ctx, filepath.Join(srcDir, li.Script))
			cmd.Dir, cmd.Stdout, cmd.Stderr = srcDir, out, out
			err = cmd.Run()
		}
		if err != nil {
			fmt.Fprintf(out, "✗ image %s\n", li.Name)
			return fmt.Errorf("build image %s: %w", li.Name, err)
		}
		fmt.Fprintf(out, "✓ image %s: %s (%s)\n", li.Name, strings.Join(li.Refs, ", "), time.Since(start).Round(time.Second))
	}
	return nil
}

// BuildPolykubeImage builds Image without the Dockerfile's Go base image: the operator and the
// echo binaries are compiled here (static, as the Dockerfile does) and copied into an image FROM
// scratch.
func BuildPolykubeImage(ctx context.Context, r execx.Runner, srcDir string) error {
	if !r.Note("build %s FROM scratch around ./operator and ./testbed/datapath/echo, compiled here (CGO_ENABLED=0, -trimpath)", Image) {
		return nil
	}
	dir, err := os.MkdirTemp("", "polykube-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	files := map[string]string{}
	for _, b := range []struct{ out, pkg string }{{"polykube-operator", "./operator"}, {"polykube-echo", "./testbed/datapath/echo"}} {
		cmd := execx.Command("go", "build", "-trimpath", "-ldflags=-s -w", "-o", filepath.Join(dir, b.out), b.pkg)
		cmd.Dir = srcDir
		cmd.Env = []string{"CGO_ENABLED=0"}
		if _, err := r.Run(ctx, cmd); err != nil {
			return fmt.Errorf("build %s: %w", b.pkg, err)
		}
		files[b.out] = filepath.Join(dir, b.out)
	}
	return scratchImage(ctx, r, Image, files, "polykube-operator", "65532:65532")
}

// FluxImages are the Flux controllers' images the in-cluster bed runs.
type FluxImages struct{ SourceController, KustomizeController string }

// List is the references, source-controller first.
func (f FluxImages) List() []string { return []string{f.SourceController, f.KustomizeController} }

// LocalFluxImages are the Flux images built here from the toolchain's controllers.
func LocalFluxImages() FluxImages {
	return FluxImages{
		SourceController:    "polykube.local/fluxcd/source-controller:" + toolchain.FluxSourceControllerVersion,
		KustomizeController: "polykube.local/fluxcd/kustomize-controller:" + toolchain.FluxKustomizeControllerVersion,
	}
}

// BuildFluxImages wraps the toolchain's source- and kustomize-controller (built from their
// modules at the versions the host bed runs; built now when missing) in images FROM
// scratch. Both are static Go programs that need no file of a base image: Git is go-git, and
// their Deployments mount /tmp (and source-controller's /data) as volumes.
func BuildFluxImages(ctx context.Context, r execx.Runner) error {
	tools, err := toolchain.Resolve(ctx, toolchain.SourceController, toolchain.KustomizeController)
	if err != nil {
		return err
	}
	refs := LocalFluxImages()
	for _, t := range tools {
		ref := refs.SourceController
		if t.Name == toolchain.KustomizeController {
			ref = refs.KustomizeController
		}
		if err := scratchImage(ctx, r, ref, map[string]string{t.Name: t.Path}, t.Name, "65534:65534"); err != nil {
			return err
		}
	}
	return nil
}

// scratchImage builds ref FROM scratch with files (name in the image's root → path here), the
// entrypoint /entrypoint and user, by Docker's classic builder, which pulls nothing (BuildKit
// would look scratch up in a registry's metadata on some versions).
func scratchImage(ctx context.Context, r execx.Runner, ref string, files map[string]string, entrypoint, user string) error {
	dir, err := os.MkdirTemp("", "polykube-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	names := make([]string, 0, len(files))
	for name, src := range files {
		if err := copyFile(src, filepath.Join(dir, name)); err != nil {
			return fmt.Errorf("image %s: %w", ref, err)
		}
		names = append(names, name)
	}
	slices.Sort(names)
	df := fmt.Sprintf("FROM scratch\nCOPY %s /\nUSER %s\nENTRYPOINT [\"/%s\"]\n", strings.Join(names, " "), user, entrypoint)
	if err := os.WriteFile(filepath.Join(dir, "Dockerfile"), []byte(df), 0o644); err != nil {
		return err
	}
	cmd := execx.Command("docker", "build", "--quiet", "--tag", ref, dir)
	cmd.Env = []string{"DOCKER_BUILDKIT=0"}
	if _, err := r.Run(ctx, cmd); err != nil {
		return fmt.Errorf("build %s: %w", ref, err)
	}
	return nil
}

func copyFile(src, dst string) error {
	if src == dst {
		return nil
	}
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o755)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
