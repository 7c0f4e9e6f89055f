package harness

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/release"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/regserver"
)

// A user installs Polykube from its release: `make release` and `make publish` put the
// operator image and the Flux artifact of the gitops tree in a registry, and each cluster's
// Flux reads the artifact through an OCIRepository, with a Kustomization applying the operator
// with that cluster's name: the manifests of FluxOCIExample, which the README gives. The
// registry scenario does exactly that against the test bed's registry add-on, then runs, as
// the cluster's operator, the binary of the image the applied Deployment names, pulled from
// the registry (kwok runs no pods).

// RegistryReleaseVersion is the version of the release the registry scenario builds: a
// pre-release no real release takes, so that a ClusterMember reporting it ran that binary.
const RegistryReleaseVersion = "v0.0.0-testbed.1"

// FluxOCIExample is the user's Flux manifests for installing from a release, relative to the
// repository's root.
const FluxOCIExample = "examples/flux-oci/polykube.yaml"

// operatorContainer is the operator's container in gitops/operator's Deployment.
const operatorContainer = "operator"

// registryRelease is what the registry scenario published and installed.
type registryRelease struct {
	dist     string
	manifest release.Manifest
	// installed are the clusters whose operator Kustomization reads the release.
	installed []string
}

func (sc *Scenario) registryAddr() (string, error) {
	rb, ok := sc.Fed.Faults().(testbed.RegistryAddon)
	if !ok {
		return "", fmt.Errorf("the %s bed runs no registry; tag the scenario @registry (the suite then brings the add-on up)", sc.Fed.Provider())
	}
	return rb.Registry()
}

// PublishRelease builds a release of this tree for linux on this machine's architecture (the
// one platform the bed runs; `make release` builds amd64 and arm64), with its image named in
// the test bed's registry, and pushes it there as `make publish REGISTRY=… INSECURE=1` does.
func (sc *Scenario) PublishRelease(ctx context.Context) error {
	addr, err := sc.registryAddr()
	if err != nil {
		return err
	}
	root, err := repoRoot(ctx)
	if err != nil {
		return err
	}
	dist, err := os.MkdirTemp("", "polykube-scenario-release-")
	if err != nil {
		return err
	}
	sc.OnTeardown("remove the scenario's release", func(context.Context) error { return os.RemoveAll(dist) })
	var out bytes.Buffer
	platform := release.Platform{OS: "linux", Arch: runtime.GOARCH}
	if _, err := release.Build(ctx, release.Options{
		Version: RegistryReleaseVersion, Dist: dist, RepoRoot: root, Repository: addr + "/polykube/operator",
		ImagePlatforms: []release.Platform{platform}, CLIPlatforms: []release.Platform{platform}, Out: &out,
	}); err != nil {
		return fmt.Errorf("build the release: %w\n%s", err, out.String())
	}
	if err := release.Publish(ctx, release.PublishOptions{Dist: dist, Registry: addr, Insecure: true, Out: &out}); err != nil {
		return fmt.Errorf("publish the release to the test bed's registry %s: %w\n%s", addr, err, out.String())
	}
	data, err := os.ReadFile(filepath.Join(dist, release.ManifestFile))
	if err != nil {
		return err
	}
	r := &registryRelease{dist: dist}
	if err := json.Unmarshal(data, &r.manifest); err != nil {
		return fmt.Errorf("read %s: %w", release.ManifestFile, err)
	}
	sc.registryRelease = r
	return nil
}

func (sc *Scenario) publishedRelease() (*registryRelease, error) {
	if sc.registryRelease == nil {
		return nil, errors.New("no release was published: add \"Given a release of this tree is published to the test bed's registry\"")
	}
	return sc.registryRelease, nil
}

// fluxOCIObjects reads FluxOCIExample and sets, for the cluster, the fields its comment tells
// a user to set (the artifact's URL and tag, the cluster name), plus what the test bed's plain
// HTTP registry and short waits need (insecure, the intervals).
func (sc *Scenario) fluxOCIObjects(ctx context.Context, r *registryRelease, cluster string) (repo, ks *unstructured.Unstructured, err error) {
	root, err := repoRoot(ctx)
	if err != nil {
		return nil, nil, err
	}
	data, err := os.ReadFile(filepath.Join(root, FluxOCIExample))
	if err != nil {
		return nil, nil, err
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				break
			}
			return nil, nil, fmt.Errorf("%s: %w", FluxOCIExample, err)
		}
		switch u.GetKind() {
		case "OCIRepository":
			repo = u
		case "Kustomization":
			ks = u
		}
	}
	if repo == nil || ks == nil {
		return nil, nil, fmt.Errorf("%s should hold an OCIRepository and a Kustomization", FluxOCIExample)
	}
	if ks.GetName() != gitrepo.OperatorKustomization || ks.GetNamespace() != testbed.FluxNamespace {
		// The same Kustomization then moves from Git to the artifact, keeping its inventory:
		// a second one would fight the first over every object.
		return nil, nil, fmt.Errorf("%s names its Kustomization %s/%s; the test bed's operator Kustomization is %s/%s: keep them equal",
			FluxOCIExample, ks.GetNamespace(), ks.GetName(), testbed.FluxNamespace, gitrepo.OperatorKustomization)
	}
	for _, set := range []struct {
		obj   *unstructured.Unstructured
		value any
		path  []string
	}{
		{repo, "oci://" + r.manifest.Gitops.Repository, []string{"spec", "url"}},
		{repo, r.manifest.Version, []string{"spec", "ref", "tag"}},
		{repo, true, []string{"spec", "insecure"}},
		{repo, "10s", []string{"spec", "interval"}},
		{ks, cluster, []string{"spec", "postBuild", "substitute", gitrepo.ClusterNameVar}},
		{ks, "1m", []string{"spec", "interval"}},
		{ks, "5s", []string{"spec", "retryInterval"}},
		{ks, "1m", []string{"spec", "timeout"}},
	} {
		if err := unstructured.SetNestedField(set.obj.Object, set.value, set.path...); err != nil {
			return nil, nil, fmt.Errorf("%s: set %s: %w", FluxOCIExample, strings.Join(set.path, "."), err)
		}
	}
	return repo, ks, nil
}

// InstallFromRegistry applies FluxOCIExample to the cluster: its operator Kustomization moves
// from the test bed's Git repository to the release's artifact in the registry. It waits until
// Flux applied the artifact's revision. The teardown moves it back to Git and the cluster
// back to the run's own operator.
func (sc *Scenario) InstallFromRegistry(ctx context.Context, cluster string) error {
	r, err := sc.publishedRelease()
	if err != nil {
		return err
	}
	repo, ks, err := sc.fluxOCIObjects(ctx, r, cluster)
	if err != nil {
		return err
	}
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(kustomizationGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(ks), current); err != nil {
		return fmt.Errorf("get the operator Kustomization of cluster %q: %w", cluster, err)
	}
	gitSpec, _, _ := unstructured.NestedMap(current.Object, "spec")
	sc.OnTeardown("move cluster "+cluster+"'s operator Kustomization back to Git", func(ctx context.Context) error {
		return sc.restoreGitOperator(ctx, cluster, gitSpec, repo)
	})
	if err := c.Create(ctx, repo); err != nil {
		return fmt.Errorf("create OCIRepository %s/%s in cluster %q: %w", repo.GetNamespace(), repo.GetName(), cluster, err)
	}
	current.Object["spec"] = ks.Object["spec"]
	if err := c.Update(ctx, current); err != nil {
		return fmt.Errorf("point the operator Kustomization of cluster %q at the release's artifact: %w", cluster, err)
	}
	r.installed = append(r.installed, cluster)
	want := r.manifest.Version + "@" + r.manifest.Gitops.Digest
	return Await(ctx, sc.Config.Wait(WaitDelivery), fmt.Sprintf("Flux in cluster %q to apply the release's artifact %s", cluster, want), func(ctx context.Context) error {
		return kustomizationApplied(ctx, c, ks.GetName(), want)
	})
}

// kustomizationApplied checks that the Kustomization is Ready with the revision applied.
func kustomizationApplied(ctx context.Context, c client.Client, name, revision string) error {
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: name}, ks); err != nil {
		return err
	}
	applied, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	ready, reason, message := fluxReady(ks)
	switch {
	case applied != revision:
		return fmt.Errorf("Kustomization %s applied %q, not yet %s (Ready %s: %s: %s)", name, applied, revision, ready, reason, message)
	case ready != "True":
		return fmt.Errorf("Kustomization %s is not Ready: %s: %s", name, reason, message)
	}
	return nil
}

// fluxReady is the status, reason and message of a Flux object's Ready condition.
func fluxReady(u *unstructured.Unstructured) (status, reason, message string) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == fluxmeta.ReadyCondition {
			s, _ := m["status"].(string)
			r, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return s, r, msg
		}
	}
	return "Unknown", "NoCondition", "no Ready condition yet"
}

// restoreGitOperator puts the operator Kustomization's Git spec back, deletes the
// OCIRepository, runs the run's own operator again and waits until Flux applied Git's
// revision of the operator again.
func (sc *Scenario) restoreGitOperator(ctx context.Context, cluster string, gitSpec map[string]any, repo *unstructured.Unstructured) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	var errs []error
	err = Await(ctx, sc.Config.Wait(WaitCleanup), "the operator Kustomization of "+cluster+" to read Git again", func(ctx context.Context) error {
		ks := &unstructured.Unstructured{}
		ks.SetGroupVersionKind(kustomizationGVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: gitrepo.OperatorKustomization}, ks); err != nil {
			return err
		}
		ks.Object["spec"] = gitSpec
		return c.Update(ctx, ks)
	})
	errs = append(errs, err)
	if err := c.Delete(ctx, repo); err != nil && !apierrors.IsNotFound(err) {
		errs = append(errs, fmt.Errorf("delete OCIRepository %s/%s in cluster %q: %w", repo.GetNamespace(), repo.GetName(), cluster, err))
	}
	if ob, err := sc.operatorBinaries(); err != nil {
		errs = append(errs, err)
	} else if _, own := ob.OperatorBinary(cluster); !own {
		errs = append(errs, ob.UseOperator(ctx, cluster, ""))
	}
	gitRev := ""
	errs = append(errs, Await(ctx, sc.Config.Wait(WaitCleanup), "Flux in "+cluster+" to apply the operator from Git again", func(ctx context.Context) error {
		repo := &unstructured.Unstructured{}
		repo.SetGroupVersionKind(gitRepositoryGVK)
		if err := c.Get(ctx, fluxKey, repo); err != nil {
			return err
		}
		gitRev, _, _ = unstructured.NestedString(repo.Object, "status", "artifact", "revision")
		return kustomizationApplied(ctx, c, gitrepo.OperatorKustomization, gitRev)
	}))
	return errors.Join(errs...)
}

// CheckReleaseDeployment checks the operator Deployment Flux applied in the cluster: its image
// is the release's image in the registry, pinned by digest, and its cluster name is the
// cluster's, substituted by Flux.
func (sc *Scenario) CheckReleaseDeployment(ctx context.Context, cluster string) error {
	r, err := sc.publishedRelease()
	if err != nil {
		return err
	}
	ctr, err := sc.appliedOperatorContainer(ctx, cluster)
	if err != nil {
		return err
	}
	var errs []error
	if want := r.manifest.Image.Repository + "@" + r.manifest.Image.Digest; ctr.Image != want {
		errs = append(errs, fmt.Errorf("the operator image in cluster %q is %s, not the release's %s", cluster, ctr.Image, want))
	}
	if want := "--cluster-name=" + cluster; !slices.Contains(ctr.Args, want) {
		errs = append(errs, fmt.Errorf("the operator in cluster %q runs with %v, not %s", cluster, ctr.Args, want))
	}
	return errors.Join(errs...)
}

// RunOperatorFromRegistry pulls the image the cluster's operator Deployment names from the
// registry, and runs the binary of its entrypoint as the cluster's operator (in place of the
// run's own, as a rollout would), then waits until it reports the release's version.
func (sc *Scenario) RunOperatorFromRegistry(ctx context.Context, cluster string) error {
	r, err := sc.publishedRelease()
	if err != nil {
		return err
	}
	ob, err := sc.operatorBinaries()
	if err != nil {
		return err
	}
	ctr, err := sc.appliedOperatorContainer(ctx, cluster)
	if err != nil {
		return err
	}
	ref := ctr.Image
	bin := filepath.Join(r.dist, "pulled", cluster, "operator")
	if err := regserver.PullEntrypoint(ctx, ref, "linux", runtime.GOARCH, bin); err != nil {
		return fmt.Errorf("pull the operator of cluster %q: %w", cluster, err)
	}
	if err := ob.UseOperator(ctx, cluster, bin); err != nil {
		return fmt.Errorf("run the operator pulled from %s in cluster %q: %w", ref, cluster, err)
	}
	return sc.AwaitOperatorVersion(ctx, cluster, r.manifest.Version)
}

// appliedOperatorContainer is the operator container of the Deployment Flux applied in cluster.
func (sc *Scenario) appliedOperatorContainer(ctx context.Context, cluster string) (corev1.Container, error) {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return corev1.Container{}, err
	}
	d := &appsv1.Deployment{}
	if err := c.Get(ctx, client.ObjectKey{Namespace: operatorNamespace, Name: operatorDeployment}, d); err != nil {
		return corev1.Container{}, fmt.Errorf("get the operator Deployment in cluster %q: %w", cluster, err)
	}
	i := slices.IndexFunc(d.Spec.Template.Spec.Containers, func(c corev1.Container) bool { return c.Name == operatorContainer })
	if i < 0 {
		return corev1.Container{}, fmt.Errorf("the operator Deployment in cluster %q has no container %q", cluster, operatorContainer)
	}
	return d.Spec.Template.Spec.Containers[i], nil
}
