package incluster

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// The clusters the bed is given (provider existing with addonPlacement: cluster) are not its
// own: it installs Flux and, through Flux, the operator into them, and Down takes out exactly
// that. So that Down never removes what was there before, Up first checks that no Flux and no
// Polykube is installed, and records that it did (State.InstalledInGiven); Down uninstalls only
// from a run that recorded it.

// fluxGroupSuffix ends the API group of every Flux CRD.
const fluxGroupSuffix = ".toolkit.fluxcd.io"

// ourCRD says whether a CRD is one the bed installs: Flux's or Polykube's.
func ourCRD(crd *apiextensionsv1.CustomResourceDefinition) bool {
	return crd.Spec.Group == polykubev1alpha1.GroupVersion.Group || strings.HasSuffix(crd.Spec.Group, fluxGroupSuffix)
}

// checkNothingInstalled fails when a given cluster already has the Flux namespace or a Flux
// or Polykube CRD. A run that already passed it (an Up run again) is not checked again.
func (b *Bed) checkNothingInstalled(ctx context.Context) error {
	if b.state.InstalledInGiven {
		return nil
	}
	if !b.env.Runner.Note("check that no cluster has namespace %s or a Flux or Polykube CRD", datapath.FluxNamespace) {
		b.state.InstalledInGiven = true // a dry run plans as if the check passed
		return nil
	}
	err := b.env.EachMember(func(m datapath.Member) error {
		cl, err := b.env.Client(m)
		if err != nil {
			return err
		}
		var found []string
		var ns corev1.Namespace
		switch err := cl.Get(ctx, client.ObjectKey{Name: datapath.FluxNamespace}, &ns); {
		case err == nil:
			found = append(found, "namespace "+datapath.FluxNamespace)
		case !apierrors.IsNotFound(err):
			return err
		}
		var crds apiextensionsv1.CustomResourceDefinitionList
		if err := cl.List(ctx, &crds); err != nil {
			return fmt.Errorf("list CRDs: %w", err)
		}
		for i := range crds.Items {
			if ourCRD(&crds.Items[i]) {
				found = append(found, "CRD "+crds.Items[i].Name)
			}
		}
		if len(found) > 0 {
			return fmt.Errorf("it already has %s: the bed installs its own Flux and Polykube and removes them on Down, so it runs only on clusters without either; use addonPlacement: host (Flux and the operator as processes of this machine), or clusters without Flux", strings.Join(found, ", "))
		}
		return nil
	})
	if err != nil {
		return err
	}
	b.state.InstalledInGiven = true
	return b.saveState()
}

// uninstall takes out of every given cluster what the bed put in: the Flux objects it applied
// (Flux prunes what they delivered: the Workloads, then the operator), then the Flux and
// Polykube CRDs, then the Flux and operator namespaces; it returns once they are gone.
func (b *Bed) uninstall(ctx context.Context) error {
	if !b.state.InstalledInGiven {
		return nil
	}
	if !b.env.Runner.Note("delete in every cluster the Kustomizations %s and %s, the GitRepository, the Flux and Polykube CRDs, Flux's cluster-wide RBAC and the namespaces %s and %s, and wait until they are gone",
		datapath.FluxObjectName, gitrepo.OperatorKustomization, datapath.FluxNamespace, b.state.Operator.Namespace) {
		return nil
	}
	w := b.env.Topology.Wait(topology.WaitFluxReady)
	return b.env.EachMember(func(m datapath.Member) error {
		cl, err := b.env.Client(m)
		if err != nil {
			return err
		}
		// One at a time, in this order: the entry point first, so that its Workloads are
		// pruned while the operator still runs to take their Deployments with them.
		steps := []client.Object{
			&kustomizev1.Kustomization{},
			&kustomizev1.Kustomization{},
			&sourcev1.GitRepository{},
		}
		steps[0].SetName(datapath.FluxObjectName)
		steps[1].SetName(gitrepo.OperatorKustomization)
		steps[2].SetName(datapath.FluxObjectName)
		for _, o := range steps {
			o.SetNamespace(datapath.FluxNamespace)
			if err := deleteAndWait(ctx, cl, w, o, m.Name); err != nil {
				return fmt.Errorf("%w (Flux removes it; is Flux stopped in %s? `polykube-testbed fault start flux %[2]s --provider existing`)", err, m.Name)
			}
		}
		var crds apiextensionsv1.CustomResourceDefinitionList
		if err := cl.List(ctx, &crds); err != nil {
			return fmt.Errorf("list CRDs: %w", err)
		}
		var errs []error
		for i := range crds.Items {
			if ourCRD(&crds.Items[i]) {
				errs = append(errs, deleteAndWait(ctx, cl, w, &crds.Items[i], m.Name))
			}
		}
		// Flux's cluster-wide RBAC: the test bed's own manifests' (local images), and what
		// `flux install` labels as part of Flux (upstream images). Up found no Flux before.
		for _, o := range datapath.FluxControllerObjects(datapath.FluxImages{}) {
			if o.GetNamespace() == "" && o.GetObjectKind().GroupVersionKind().Kind != "Namespace" {
				errs = append(errs, deleteAndWait(ctx, cl, w, o, m.Name))
			}
		}
		for _, l := range []client.ObjectList{&rbacv1.ClusterRoleBindingList{}, &rbacv1.ClusterRoleList{}} {
			if err := cl.List(ctx, l, client.MatchingLabels{"app.kubernetes.io/part-of": "flux"}); err != nil {
				errs = append(errs, err)
				continue
			}
			_ = meta.EachListItem(l, func(obj runtime.Object) error {
				errs = append(errs, deleteAndWait(ctx, cl, w, obj.(client.Object), m.Name))
				return nil
			})
		}
		for _, name := range []string{datapath.FluxNamespace, b.state.Operator.Namespace} {
			if name != "" {
				errs = append(errs, deleteAndWait(ctx, cl, w, &corev1.Namespace{}, m.Name, name))
			}
		}
		return errors.Join(errs...)
	})
}

// deleteAndWait deletes o (named by name when given) and waits until it is gone.
func deleteAndWait(ctx context.Context, cl client.Client, w topology.Wait, o client.Object, cluster string, name ...string) error {
	if len(name) > 0 {
		o.SetName(name[0])
	}
	key := client.ObjectKeyFromObject(o)
	kind := fmt.Sprintf("%T", o)
	kind = kind[strings.LastIndex(kind, ".")+1:]
	if err := cl.Delete(ctx, o); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete %s %s in %s: %w", kind, key, cluster, err)
	}
	return wait.For(ctx, w, fmt.Sprintf("%s %s in %s to be gone", kind, key, cluster), func(ctx context.Context) error {
		err := cl.Get(ctx, key, o)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return errors.New("still there")
	})
}
