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
	"sync"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	"github.com/sigstore/cosign/v3/pkg/cosign"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/polykube/polykube/internal/release"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/regserver"
)

// A user installs Polykube from its release: `make release` and `make publish` put the
// operator image and the Flux artifact of the gitops tree in a registry, and each cluster's
// Flux reads the artifact through an OCIRepository, with a Kustomization applying the operator
// with that cluster's name: the manifests of FluxOCIExample, which the README gives. The
// registry scenario does exactly that against the test bed's registry add-on, then checks that
// the cluster's operator runs the image the applied Deployment names, pulled from the registry:
// its rolled-out pods where the operator runs in the cluster, else (kwok runs no pods) the
// binary of that image run by the test bed as the cluster's operator (operatorpods.go).

// RegistryReleaseVersion is the version of the release the registry scenario builds: a
// pre-release no real release takes, so that a ClusterMember reporting it ran that binary.
const RegistryReleaseVersion = "v0.0.0-testbed.1"

// FluxOCIExample is the user's Flux manifests for installing from a release, relative to the
// repository's root.
const FluxOCIExample = "examples/flux-oci/polykube.yaml"

// FluxOCIRepository is the name of FluxOCIExample's OCIRepository.
const FluxOCIRepository = "polykube"

var ociRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "OCIRepository"}

// operatorContainer is the operator's container in gitops/operator's Deployment.
const operatorContainer = "operator"

// registryRelease is what the registry scenario published and installed.
type registryRelease struct {
	dist     string
	manifest release.Manifest
	// trustedKey is the PEM public key the clusters verify the release with (the Secret the
	// OCIRepository's spec.verify names); the release was signed with its private half unless
	// signedByOther.
	trustedKey    []byte
	signedByOther bool
	// installed are the clusters whose operator Kustomization reads the release.
	installed []string
	// before is, per cluster pointed at the release, the operator it ran until then.
	before map[string]operatorRun
}

// operatorRun is what a cluster's operator runs: the container of its Deployment, the binary
// the test bed runs for it (host operators) or the Deployment's ready pods (operators in the
// cluster), and the revision Flux last applied of it.
type operatorRun struct {
	image, binary, appliedRevision string
	args                           []string
	pods                           []operatorPod
}

// CosignKeySecret is the Secret of the public key that verifies the release, as
// FluxOCIExample's OCIRepository names it in spec.verify.secretRef.
const CosignKeySecret = "polykube-cosign"

// newCosignKey writes a cosign key pair into dir, as `cosign generate-key-pair` does, and returns
// the private key's path and the public key's PEM.
func newCosignKey(dir, password string) (string, []byte, error) {
	keys, err := cosign.GenerateKeyPair(func(bool) ([]byte, error) { return []byte(password), nil })
	if err != nil {
		return "", nil, err
	}
	path := filepath.Join(dir, "cosign.key")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", nil, err
	}
	return path, keys.PublicBytes, os.WriteFile(path, keys.PrivateBytes, 0o600)
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
// the test bed's registry, signed with a cosign key made for the scenario (make release
// SIGN_KEY=…), and pushes it there as `make publish REGISTRY=… INSECURE=1` does. The clusters
// trust that key. With signedByOther, the release is signed by another key the clusters do
// not trust, as an artifact pushed by someone else would be.
//
// The release signed by the trusted key is built once per suite and shared by the scenarios
// that ask for it (a build takes most of such a scenario's time); the suite's Close removes it.
func (sc *Scenario) PublishRelease(ctx context.Context, signedByOther bool) error {
	if !signedByOther {
		sc.sharedRelease.mu.Lock()
		defer sc.sharedRelease.mu.Unlock()
		if r := sc.sharedRelease.r; r != nil {
			sc.registryRelease = &registryRelease{dist: r.dist, manifest: r.manifest, trustedKey: r.trustedKey, before: map[string]operatorRun{}}
			return nil
		}
	}
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
	// The whole directory (keys and release): dist names its release/ below from here on.
	if top := dist; signedByOther {
		sc.OnTeardown("remove the scenario's release", func(context.Context) error { return os.RemoveAll(top) })
	} else {
		sc.sharedRelease.dir = top
	}
	const password = "testbed"
	signKey, trusted, err := newCosignKey(filepath.Join(dist, "keys", "trusted"), password)
	if err != nil {
		return fmt.Errorf("make the scenario's cosign key: %w", err)
	}
	if signedByOther {
		if signKey, _, err = newCosignKey(filepath.Join(dist, "keys", "other"), password); err != nil {
			return fmt.Errorf("make another cosign key: %w", err)
		}
	}
	var out bytes.Buffer
	platform := release.Platform{OS: "linux", Arch: runtime.GOARCH}
	if _, err := release.Build(ctx, release.Options{
		Version: RegistryReleaseVersion, Dist: filepath.Join(dist, "release"), RepoRoot: root, Repository: addr + "/polykube/operator",
		ImagePlatforms: []release.Platform{platform}, CLIPlatforms: []release.Platform{platform},
		SignKey: signKey, SignKeyPassword: []byte(password), Out: &out,
	}); err != nil {
		return fmt.Errorf("build the release: %w\n%s", err, out.String())
	}
	dist = filepath.Join(dist, "release")
	if err := release.Publish(ctx, release.PublishOptions{Dist: dist, Registry: addr, Insecure: true, Out: &out}); err != nil {
		return fmt.Errorf("publish the release to the test bed's registry %s: %w\n%s", addr, err, out.String())
	}
	data, err := os.ReadFile(filepath.Join(dist, release.ManifestFile))
	if err != nil {
		return err
	}
	r := &registryRelease{dist: dist, trustedKey: trusted, signedByOther: signedByOther, before: map[string]operatorRun{}}
	if err := json.Unmarshal(data, &r.manifest); err != nil {
		return fmt.Errorf("read %s: %w", release.ManifestFile, err)
	}
	sc.registryRelease = r
	if !signedByOther {
		shared := *r
		sc.sharedRelease.r = &shared
	}
	return nil
}

// sharedRelease is the suite's one release signed by the trusted key, built by the first
// scenario that asks for it.
type sharedRelease struct {
	mu sync.Mutex
	r  *registryRelease
	// dir is the temporary directory it was built in, removed by the suite's Close.
	dir string
}

// Close removes what the suite kept for its scenarios: the shared release.
func (s *Suite) Close() error {
	s.sharedRelease.mu.Lock()
	defer s.sharedRelease.mu.Unlock()
	if s.sharedRelease.dir == "" {
		return nil
	}
	err := os.RemoveAll(s.sharedRelease.dir)
	s.sharedRelease.r, s.sharedRelease.dir = nil, ""
	return err
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
	if secret, _, _ := unstructured.NestedString(repo.Object, "spec", "verify", "secretRef", "name"); repo.GetName() != FluxOCIRepository || secret != CosignKeySecret {
		return nil, nil, fmt.Errorf("%s names its OCIRepository %s and its verify Secret %q; the scenario expects %s verified with the Secret %s: keep them equal",
			FluxOCIExample, repo.GetName(), secret, FluxOCIRepository, CosignKeySecret)
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

// InstallFromRegistry applies FluxOCIExample to the cluster (PointAtRelease) and waits until
// Flux verified the artifact's signature and applied its revision.
func (sc *Scenario) InstallFromRegistry(ctx context.Context, cluster string) error {
	if err := sc.PointAtRelease(ctx, cluster); err != nil {
		return err
	}
	r, c, err := sc.releaseAndClient(cluster)
	if err != nil {
		return err
	}
	want := r.manifest.Version + "@" + r.manifest.Gitops.Digest
	return Await(ctx, sc.Config.Wait(WaitDelivery), fmt.Sprintf("Flux in cluster %q to apply the release's artifact %s", cluster, want), func(ctx context.Context) error {
		return kustomizationApplied(ctx, c, gitrepo.OperatorKustomization, want)
	})
}

func (sc *Scenario) releaseAndClient(cluster string) (*registryRelease, client.Client, error) {
	r, err := sc.publishedRelease()
	if err != nil {
		return nil, nil, err
	}
	c, err := sc.Clients.Admin(cluster)
	return r, c, err
}

// PointAtRelease applies FluxOCIExample to the cluster as a user does: the Secret of the
// public key the release is verified with, and the OCIRepository and Kustomization, the
// operator Kustomization moving from the test bed's Git repository to the release's artifact.
// It records what the cluster's operator ran until then. The teardown moves it back to Git
// and the cluster back to the run's own operator.
func (sc *Scenario) PointAtRelease(ctx context.Context, cluster string) error {
	r, c, err := sc.releaseAndClient(cluster)
	if err != nil {
		return err
	}
	repo, ks, err := sc.fluxOCIObjects(ctx, r, cluster)
	if err != nil {
		return err
	}
	current := &unstructured.Unstructured{}
	current.SetGroupVersionKind(kustomizationGVK)
	if err := c.Get(ctx, client.ObjectKeyFromObject(ks), current); err != nil {
		return fmt.Errorf("get the operator Kustomization of cluster %q: %w", cluster, err)
	}
	before, err := sc.operatorRunning(ctx, cluster)
	if err != nil {
		return err
	}
	r.before[cluster] = before
	gitSpec, _, _ := unstructured.NestedMap(current.Object, "spec")
	secret := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: repo.GetNamespace(), Name: CosignKeySecret},
		Data:       map[string][]byte{release.PublicKeyFile: r.trustedKey},
	}
	sc.OnTeardown("move cluster "+cluster+"'s operator Kustomization back to Git", func(ctx context.Context) error {
		err := sc.restoreGitOperator(ctx, cluster, gitSpec, repo)
		if derr := c.Delete(ctx, secret); derr != nil && !apierrors.IsNotFound(derr) {
			err = errors.Join(err, derr)
		}
		return err
	})
	if err := c.Create(ctx, secret); err != nil {
		return fmt.Errorf("create the Secret %s/%s of the release's public key in cluster %q: %w", secret.Namespace, secret.Name, cluster, err)
	}
	if err := c.Create(ctx, repo); err != nil {
		return fmt.Errorf("create OCIRepository %s/%s in cluster %q: %w", repo.GetNamespace(), repo.GetName(), cluster, err)
	}
	current.Object["spec"] = ks.Object["spec"]
	if err := c.Update(ctx, current); err != nil {
		return fmt.Errorf("point the operator Kustomization of cluster %q at the release's artifact: %w", cluster, err)
	}
	r.installed = append(r.installed, cluster)
	return nil
}

// operatorRunning is what the cluster's operator runs now.
func (sc *Scenario) operatorRunning(ctx context.Context, cluster string) (operatorRun, error) {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return operatorRun{}, err
	}
	ctr, err := sc.appliedOperatorContainer(ctx, cluster)
	if err != nil {
		return operatorRun{}, err
	}
	run := operatorRun{image: ctr.Image, args: ctr.Args}
	if ob, host := sc.hostOperators(); host {
		run.binary, _ = ob.OperatorBinary(cluster)
	} else if run.pods, err = sc.readyOperatorPods(ctx, cluster); err != nil {
		return operatorRun{}, err
	}
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: gitrepo.OperatorKustomization}, ks); err != nil {
		return operatorRun{}, fmt.Errorf("get the operator Kustomization of cluster %q: %w", cluster, err)
	}
	run.appliedRevision, _, _ = unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	return run, nil
}

// ociRepositoryCondition is the status, reason and message of a condition of the release's
// OCIRepository in the cluster.
func (sc *Scenario) ociRepositoryCondition(ctx context.Context, c client.Client, cluster, condition string) (string, string, string, error) {
	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(ociRepositoryGVK)
	if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: FluxOCIRepository}, repo); err != nil {
		return "", "", "", fmt.Errorf("get OCIRepository %s/%s in cluster %q: %w", testbed.FluxNamespace, FluxOCIRepository, cluster, err)
	}
	conds, _, _ := unstructured.NestedSlice(repo.Object, "status", "conditions")
	for _, co := range conds {
		m, _ := co.(map[string]any)
		if m["type"] == condition {
			st, _ := m["status"].(string)
			re, _ := m["reason"].(string)
			msg, _ := m["message"].(string)
			return st, re, msg, nil
		}
	}
	return "Unknown", "NoCondition", "no " + condition + " condition yet", nil
}

// CheckArtifactVerified checks that Flux verified the cosign signature of the artifact it
// applied in the cluster (the OCIRepository's SourceVerified condition).
func (sc *Scenario) CheckArtifactVerified(ctx context.Context, cluster string) error {
	_, c, err := sc.releaseAndClient(cluster)
	if err != nil {
		return err
	}
	st, reason, msg, err := sc.ociRepositoryCondition(ctx, c, cluster, sourcev1.SourceVerifiedCondition)
	if err != nil {
		return err
	}
	if st != "True" {
		return fmt.Errorf("Flux in cluster %q did not verify the release's signature: %s %s: %s", cluster, st, reason, msg)
	}
	return nil
}

// AwaitReleaseRefused waits until Flux in the cluster refuses the release's artifact because
// its signature does not verify (the OCIRepository Ready=False, reason VerificationError),
// then checks, over the hold wait, that the operator Kustomization never applied it.
func (sc *Scenario) AwaitReleaseRefused(ctx context.Context, cluster string) error {
	r, c, err := sc.releaseAndClient(cluster)
	if err != nil {
		return err
	}
	if err := Await(ctx, sc.Config.Wait(WaitDelivery), fmt.Sprintf("Flux in cluster %q to refuse the release's artifact", cluster), func(ctx context.Context) error {
		st, reason, msg, err := sc.ociRepositoryCondition(ctx, c, cluster, fluxmeta.ReadyCondition)
		if err != nil {
			return err
		}
		if st != "False" || reason != sourcev1.VerificationError {
			return fmt.Errorf("OCIRepository %s is Ready %s (%s: %s), not False for %s", FluxOCIRepository, st, reason, msg, sourcev1.VerificationError)
		}
		return nil
	}); err != nil {
		return err
	}
	artifact := r.manifest.Version + "@" + r.manifest.Gitops.Digest
	return Hold(ctx, sc.Config.Wait(WaitHold), fmt.Sprintf("the operator Kustomization of %q not to apply the refused artifact", cluster), func(ctx context.Context) error {
		ks := &unstructured.Unstructured{}
		ks.SetGroupVersionKind(kustomizationGVK)
		if err := c.Get(ctx, client.ObjectKey{Namespace: testbed.FluxNamespace, Name: gitrepo.OperatorKustomization}, ks); err != nil {
			return err
		}
		if applied, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision"); applied == artifact {
			return fmt.Errorf("the operator Kustomization of %q applied the artifact %s, whose signature does not verify", cluster, artifact)
		}
		return nil
	})
}

// CheckOperatorKept checks that the cluster's operator runs what it ran before it was pointed
// at the release: the same Deployment image and arguments, the same binary or the same pods,
// the same revision.
func (sc *Scenario) CheckOperatorKept(ctx context.Context, cluster string) error {
	before, now, err := sc.operatorBeforeAndNow(ctx, cluster)
	if err != nil {
		return err
	}
	var errs []error
	if now.image != before.image || !slices.Equal(now.args, before.args) {
		errs = append(errs, fmt.Errorf("the operator Deployment of %q changed: image %s args %v, before %s %v", cluster, now.image, now.args, before.image, before.args))
	}
	errs = append(errs, operatorKept(cluster, before, now))
	if now.appliedRevision != before.appliedRevision {
		errs = append(errs, fmt.Errorf("the operator Kustomization of %q applied %s, before %s", cluster, now.appliedRevision, before.appliedRevision))
	}
	return errors.Join(errs...)
}

// operatorKept says how the operator a cluster runs now differs from the one it ran before: its
// binary (host operators) or its pods (operators in the cluster).
func operatorKept(cluster string, before, now operatorRun) error {
	if before.pods != nil || now.pods != nil {
		if err := podsKept(before.pods, now.pods); err != nil {
			return fmt.Errorf("cluster %q does not run the operator pods it ran before: %w", cluster, err)
		}
		return nil
	}
	if now.binary != before.binary {
		return fmt.Errorf("cluster %q runs the operator binary %s, before %s", cluster, now.binary, before.binary)
	}
	return nil
}

// operatorBeforeAndNow is what the cluster's operator ran when the scenario recorded it (before
// PointAtRelease or HandOverOperator) and what it runs now.
func (sc *Scenario) operatorBeforeAndNow(ctx context.Context, cluster string) (before, now operatorRun, err error) {
	r, err := sc.publishedRelease()
	if err != nil {
		return before, now, err
	}
	before, ok := r.before[cluster]
	if !ok {
		return before, now, fmt.Errorf("nothing was recorded of cluster %q's operator: point it at the release or hand it over from Flux first", cluster)
	}
	now, err = sc.operatorRunning(ctx, cluster)
	return before, now, err
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
// OCIRepository, waits until Flux applied Git's revision of the operator again and runs the
// run's own operator again (restoreOwnOperator).
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
	// Host operators: the run's own binary first, so that it serves while Flux applies.
	if _, host := sc.hostOperators(); host {
		errs = append(errs, sc.restoreOwnOperator(ctx, cluster, true))
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
	if _, host := sc.hostOperators(); !host {
		errs = append(errs, sc.restoreOwnOperator(ctx, cluster, true))
	}
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

// RunOperatorFromRegistry checks that the cluster runs the release's operator, pulled from the
// registry, and waits until it reports the release's version. Where the operator runs in the
// cluster, that is the Deployment's rollout: every replica ready, each running the release's
// image by digest as the kubelet pulled it. Where it runs on the host (kwok), the test bed
// pulls the image the Deployment names from the registry and runs the binary of its entrypoint
// as the cluster's operator (in place of the run's own, as a rollout would).
func (sc *Scenario) RunOperatorFromRegistry(ctx context.Context, cluster string) error {
	r, err := sc.publishedRelease()
	if err != nil {
		return err
	}
	ob, host := sc.hostOperators()
	if !host {
		if err := sc.awaitOperatorRollout(ctx, WaitDelivery, cluster, r.manifest.Image.Digest); err != nil {
			return err
		}
		return sc.AwaitOperatorVersion(ctx, cluster, r.manifest.Version)
	}
	ctr, err := sc.appliedOperatorContainer(ctx, cluster)
	if err != nil {
		return err
	}
	ref := ctr.Image
	// Per scenario: a binary another scenario's cluster still runs is not overwritten.
	bin := filepath.Join(r.dist, "pulled", sc.Namespace, cluster, "operator")
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
