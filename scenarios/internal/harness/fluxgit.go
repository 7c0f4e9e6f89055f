package harness

import (
	"context"
	"fmt"
	"time"

	fluxmeta "github.com/fluxcd/pkg/apis/meta"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// fluxGit is Git for a federation whose clusters each run a Flux GitRepository and
// Kustomization named as the test bed names them (flux-system/polykube), following one
// repository laid out by gitrepo. Both beds are such federations; they differ in how a
// commit reaches the repository and how the harness reaches a cluster.
type fluxGit struct {
	// commit writes a change to the repository and returns the revision as Flux reports it.
	commit func(ctx context.Context, ch gitrepo.Change) (string, error)
	// client is an admin client of a cluster.
	client func(cluster string) (client.Client, error)
}

func (g fluxGit) Commit(ctx context.Context, message string, put map[string][]byte, remove []string) (string, error) {
	return g.commit(ctx, gitrepo.Change{Put: put, Remove: remove, Message: message})
}

func (g fluxGit) Dir() string { return gitrepo.WorkloadsDir }

var (
	kustomizationGVK = schema.GroupVersionKind{Group: "kustomize.toolkit.fluxcd.io", Version: "v1", Kind: "Kustomization"}
	gitRepositoryGVK = schema.GroupVersionKind{Group: "source.toolkit.fluxcd.io", Version: "v1", Kind: "GitRepository"}
)

// fluxKey is the name of every cluster's GitRepository and Kustomization.
var fluxKey = client.ObjectKey{Namespace: testbed.FluxNamespace, Name: testbed.FluxObjectName}

// AppliedRevision reads the cluster's Flux Kustomization and GitRepository.
func (g fluxGit) AppliedRevision(ctx context.Context, cluster string) (string, bool, error) {
	c, err := g.client(cluster)
	if err != nil {
		return "", false, err
	}
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	if err := c.Get(ctx, fluxKey, ks); err != nil {
		return "", false, fmt.Errorf("get Kustomization %s: %w", fluxKey, err)
	}
	rev, _, _ := unstructured.NestedString(ks.Object, "status", "lastAppliedRevision")
	repo := &unstructured.Unstructured{}
	repo.SetGroupVersionKind(gitRepositoryGVK)
	if err := c.Get(ctx, fluxKey, repo); err != nil {
		return rev, false, fmt.Errorf("get GitRepository %s: %w", fluxKey, err)
	}
	return rev, readyTrue(repo), nil
}

// RequestApply sets Flux's reconcile-request annotation on the cluster's Kustomization.
func (g fluxGit) RequestApply(ctx context.Context, cluster string) (string, error) {
	c, err := g.client(cluster)
	if err != nil {
		return "", err
	}
	token, err := requestReconcile(ctx, c, kustomizationGVK)
	if err != nil {
		return "", fmt.Errorf("ask Flux in cluster %q to apply again: %w", cluster, err)
	}
	return token, nil
}

// ApplyHandled compares the Kustomization's status.lastHandledReconcileAt with the token.
func (g fluxGit) ApplyHandled(ctx context.Context, cluster, token string) (bool, bool, string, error) {
	c, err := g.client(cluster)
	if err != nil {
		return false, false, "", err
	}
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	if err := c.Get(ctx, fluxKey, ks); err != nil {
		return false, false, "", fmt.Errorf("get Kustomization: %w", err)
	}
	handled, _, _ := unstructured.NestedString(ks.Object, "status", "lastHandledReconcileAt")
	return handled == token, readyTrue(ks), readyMessage(ks), nil
}

// requestReconcile sets Flux's reconcile-request annotation on the cluster's Flux object of
// kind gvk, as `flux reconcile` does, and returns the request's token.
func requestReconcile(ctx context.Context, c client.Client, gvk schema.GroupVersionKind) (string, error) {
	token := time.Now().UTC().Format(time.RFC3339Nano)
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(fluxKey.Namespace)
	obj.SetName(fluxKey.Name)
	patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:%q}}}`, fluxmeta.ReconcileRequestAnnotation, token)
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return "", err
	}
	return token, nil
}

// readyTrue reports whether an unstructured object's Ready condition is True.
func readyTrue(u *unstructured.Unstructured) bool {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Ready" {
			return m["status"] == "True"
		}
	}
	return false
}

// readyMessage is an unstructured object's Ready condition's reason and message.
func readyMessage(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, ok := c.(map[string]any)
		if ok && m["type"] == "Ready" {
			return fmt.Sprintf("%v: %v", m["reason"], m["message"])
		}
	}
	return "no Ready condition"
}
