package datapath

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/yaml"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// The Flux objects of every cluster, named as in the host bed.
const (
	FluxNamespace  = "flux-system"
	FluxObjectName = "polykube"
)

// FluxComponents are the only Flux controllers the test bed installs.
const FluxComponents = "source-controller,kustomize-controller"

// InstallFlux installs the source and kustomize controllers in every member with the manifests
// the flux CLI embeds (`flux install` waits until they are ready).
func InstallFlux(ctx context.Context, e *Env) error {
	return e.each(func(m Member) error {
		_, err := e.Runner.Run(ctx, e.cli("flux", "install", "--context", m.Context, "--components="+FluxComponents))
		return err
	})
}

// FluxObjects are a member's GitRepository (the test bed's repository at gitURL) and its
// Kustomizations, with ${CLUSTER_NAME} substituted: the operator's (clusters/<name>/operator,
// which names the release directory operator/, as users deliver it), then the entry point
// clusters/<name>, which depends on it.
func FluxObjects(top *topology.Topology, cluster, gitURL string) (*sourcev1.GitRepository, []*kustomizev1.Kustomization) {
	interval := metav1.Duration{Duration: top.Flux.Interval.Duration}
	repo := &sourcev1.GitRepository{
		TypeMeta:   metav1.TypeMeta{APIVersion: sourcev1.GroupVersion.String(), Kind: sourcev1.GitRepositoryKind},
		ObjectMeta: metav1.ObjectMeta{Name: FluxObjectName, Namespace: FluxNamespace},
		Spec: sourcev1.GitRepositorySpec{
			URL:       gitURL,
			Interval:  interval,
			Timeout:   &metav1.Duration{Duration: 20 * time.Second},
			Reference: &sourcev1.GitRepositoryRef{Branch: gitrepo.Branch},
		},
	}
	ks := func(name, path string, dependsOn ...string) *kustomizev1.Kustomization {
		k := &kustomizev1.Kustomization{
			TypeMeta:   metav1.TypeMeta{APIVersion: kustomizev1.GroupVersion.String(), Kind: kustomizev1.KustomizationKind},
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: FluxNamespace},
			Spec: kustomizev1.KustomizationSpec{
				Interval:      metav1.Duration{Duration: top.Flux.ApplyInterval.Duration},
				RetryInterval: &metav1.Duration{Duration: 5 * time.Second},
				Timeout:       &metav1.Duration{Duration: 2 * time.Minute},
				Path:          path,
				Prune:         true,
				SourceRef:     kustomizev1.CrossNamespaceSourceReference{Kind: sourcev1.GitRepositoryKind, Name: FluxObjectName},
				PostBuild:     &kustomizev1.PostBuild{Substitute: map[string]string{gitrepo.ClusterNameVar: cluster}},
			},
		}
		for _, d := range dependsOn {
			k.Spec.DependsOn = append(k.Spec.DependsOn, kustomizev1.DependencyReference{Name: d})
		}
		return k
	}
	return repo, []*kustomizev1.Kustomization{
		ks(gitrepo.OperatorKustomization, "./"+ClusterOperatorPath(cluster)),
		ks(FluxObjectName, "./"+gitrepo.ClusterPath(cluster), gitrepo.OperatorKustomization),
	}
}

// ApplyFluxObjects creates or updates every member's GitRepository and Kustomizations.
func ApplyFluxObjects(ctx context.Context, e *Env, gitURL string) error {
	return e.each(func(m Member) error {
		repo, kss := FluxObjects(e.Topology, m.Name, gitURL)
		docs := []string{string(mustYAML(repo))}
		objs := []client.Object{repo}
		for _, ks := range kss {
			docs = append(docs, string(mustYAML(ks)))
			objs = append(objs, ks)
		}
		if !e.Runner.Note("apply in %s:\n%s", m.Context, strings.Join(docs, "---\n")) {
			return nil
		}
		cl, err := e.Client(m)
		if err != nil {
			return err
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: FluxNamespace}}
		if err := cl.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s: %w", FluxNamespace, err)
		}
		for _, obj := range objs {
			want := obj.DeepCopyObject().(client.Object)
			if _, err := controllerutil.CreateOrUpdate(ctx, cl, obj, func() error {
				switch o := obj.(type) {
				case *sourcev1.GitRepository:
					o.Spec = want.(*sourcev1.GitRepository).Spec
				case *kustomizev1.Kustomization:
					o.Spec = want.(*kustomizev1.Kustomization).Spec
				}
				return nil
			}); err != nil {
				return fmt.Errorf("apply %T %s/%s: %w", obj, FluxNamespace, obj.GetName(), err)
			}
		}
		return nil
	})
}

// WaitApplied waits until every member's Kustomization is Ready with the revision applied
// ("" accepts any revision).
func WaitApplied(ctx context.Context, e *Env, revision string) error {
	if !e.Runner.Note("wait until Kustomization %s/%s in every cluster is Ready with %s applied", FluxNamespace, FluxObjectName, orAny(revision)) {
		return nil
	}
	return e.each(func(m Member) error {
		cl, err := e.Client(m)
		if err != nil {
			return err
		}
		return wait.For(ctx, e.wait(topology.WaitDelivery), fmt.Sprintf("Flux in %s to apply %s", m.Name, orAny(revision)), func(ctx context.Context) error {
			ks := &kustomizev1.Kustomization{}
			if err := cl.Get(ctx, client.ObjectKey{Namespace: FluxNamespace, Name: FluxObjectName}, ks); err != nil {
				return err
			}
			ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
			switch {
			case ready == nil:
				return errors.New("the Kustomization has no Ready condition yet" + sourceSays(ctx, cl))
			case revision != "" && ks.Status.LastAppliedRevision != revision:
				return fmt.Errorf("applied %q, not yet %s (%s: %s)%s", ks.Status.LastAppliedRevision, revision, ready.Reason, ready.Message, sourceSays(ctx, cl))
			case ready.Status != metav1.ConditionTrue:
				return fmt.Errorf("not Ready: %s: %s%s", ready.Reason, ready.Message, sourceSays(ctx, cl))
			}
			return nil
		})
	})
}

// sourceSays is what the GitRepository says when it is not Ready, for a Kustomization that
// waits on it: a Kustomization only says its source is not ready, the GitRepository says why
// (the Git server unreachable, a wrong branch). Empty when the source is Ready.
func sourceSays(ctx context.Context, cl client.Client) string {
	repo := &sourcev1.GitRepository{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: FluxNamespace, Name: FluxObjectName}, repo); err != nil {
		return fmt.Sprintf("; the GitRepository %s/%s cannot be read: %v", FluxNamespace, FluxObjectName, err)
	}
	c := apimeta.FindStatusCondition(repo.Status.Conditions, meta.ReadyCondition)
	switch {
	case c == nil:
		return fmt.Sprintf("; the GitRepository %s/%s has not reported yet", FluxNamespace, FluxObjectName)
	case c.Status != metav1.ConditionTrue:
		return fmt.Sprintf("; the GitRepository %s/%s is not Ready: %s: %s", FluxNamespace, FluxObjectName, c.Reason, c.Message)
	}
	return ""
}

func orAny(revision string) string {
	if revision == "" {
		return "a revision"
	}
	return revision
}

func mustYAML(obj any) []byte {
	data, err := yaml.Marshal(obj)
	if err != nil {
		panic(err)
	}
	// Drop the empty status and creationTimestamp a typed object always carries.
	var m map[string]any
	if yaml.Unmarshal(data, &m) == nil {
		delete(m, "status")
		if md, ok := m["metadata"].(map[string]any); ok {
			delete(md, "creationTimestamp")
		}
		if out, err := yaml.Marshal(m); err == nil {
			return out
		}
	}
	return data
}
