// Package datapath holds the in-cluster bed's actions (testbed/incluster) that turn clusters
// with real nodes (kind, k0s) into a Polykube federation with a real network. Each action
// announces itself on a status line, and runs its external programs (cilium, flux, docker)
// through one execx.Runner, so that a dry run prints every action and every command line
// with its arguments, from the same code a real run executes:
//
//   - preflight: Docker, memory, inotify limits and the pinned CLIs, with install hints;
//   - the operator image, built from the repository's Dockerfile and loaded into every node;
//   - Cilium ClusterMesh through the cilium CLI: a unique cluster.id per cluster, one CA for
//     the mesh, a distinct clustermesh-apiserver NodePort per cluster, every pair connected;
//   - Flux through `flux install` (source and kustomize controllers), following a Git
//     server that the nodes reach on the Docker network's gateway;
//   - the routing probe: a client Job calls a global Service and every answer names the
//     cluster that served it; Tally counts them.
package datapath

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/pipeline"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// Scheme knows the kinds the datapath actions read and write.
var Scheme = runtime.NewScheme()

func init() {
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, appsv1.AddToScheme, batchv1.AddToScheme,
		rbacv1.AddToScheme, apiextensionsv1.AddToScheme, sourcev1.AddToScheme, kustomizev1.AddToScheme, polykubev1alpha1.AddToScheme} {
		if err := add(Scheme); err != nil {
			panic(err)
		}
	}
}

// Member is one cluster of the federation as the datapath actions see it.
type Member struct {
	topology.Cluster
	// Index is the cluster's position in the topology (0 for the first).
	Index int
	// Kubeconfig and Context reach the cluster's API server from this host.
	Kubeconfig, Context string
	// APIHost and APIPort reach the API server from the cluster's own nodes without
	// kube-proxy (Cilium's k8sServiceHost and k8sServicePort).
	APIHost string
	APIPort int
}

// Env is what every datapath action works with.
type Env struct {
	Runner   execx.Runner
	Topology *topology.Topology
	Members  []Member
	// Out receives the status lines.
	Out io.Writer
	// Image is the Polykube image the nodes run (the echo server and the probes are in it):
	// the one in the run's registry when the nodes pull it from there; "" means Image, loaded
	// into every node.
	Image string
}

// PolykubeImage is the Polykube image the nodes run: Env.Image, or Image.
func (e *Env) PolykubeImage() string {
	if e.Image != "" {
		return e.Image
	}
	return Image
}

// KubeconfigEnv is the KUBECONFIG that holds every member's context, for the CLIs that talk
// to two clusters at once (cilium clustermesh connect).
func (e *Env) KubeconfigEnv() string {
	paths := make([]string, len(e.Members))
	for i, m := range e.Members {
		paths[i] = m.Kubeconfig
	}
	return "KUBECONFIG=" + strings.Join(paths, ":")
}

// cli is a command of an external CLI that finds the clusters through KubeconfigEnv.
func (e *Env) cli(path string, args ...string) execx.Cmd {
	return execx.Cmd{Path: path, Args: args, Env: []string{e.KubeconfigEnv()}}
}

// Step runs one action between kind-style status lines.
func (e *Env) Step(what string, fn func() error) error {
	return e.Steps().Step(what, fn)
}

// Steps announces the actions of a pipeline on Out, untimed in a dry run (whose output is
// compared with golden files).
func (e *Env) Steps() *pipeline.Steps {
	return &pipeline.Steps{Out: e.Out, Untimed: e.Runner.DryRun()}
}

// Client is an admin client of a member.
func (e *Env) Client(m Member) (client.Client, error) {
	cfg, err := provider.RESTConfig(m.Kubeconfig, m.Context)
	if err != nil {
		return nil, err
	}
	cfg.Timeout = 20 * time.Second
	return client.New(cfg, client.Options{Scheme: Scheme})
}

// Member returns the member of that name.
func (e *Env) Member(name string) (Member, error) {
	for _, m := range e.Members {
		if m.Name == name {
			return m, nil
		}
	}
	return Member{}, fmt.Errorf("no cluster %q in the federation (clusters: %s)", name, strings.Join(e.Topology.ClusterNames(), ", "))
}

// wait returns the topology's wait of that name (topology.DefaultWaits unless it tunes it).
func (e *Env) wait(name string) topology.Wait { return e.Topology.Wait(name) }

// EachMember runs fn for every member at once and returns every member's error; a dry
// run goes in order, so that its plan reads the same each time.
func (e *Env) EachMember(fn func(m Member) error) error {
	if e.Runner.DryRun() {
		return e.each(fn)
	}
	errs := make([]error, len(e.Members))
	var wg sync.WaitGroup
	for i, m := range e.Members {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := fn(m); err != nil {
				errs[i] = fmt.Errorf("%s: %w", m.Name, err)
			}
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// each runs fn for every member in order and stops at the first error.
func (e *Env) each(fn func(m Member) error) error {
	for _, m := range e.Members {
		if err := fn(m); err != nil {
			return fmt.Errorf("%s: %w", m.Name, err)
		}
	}
	return nil
}
