package incluster

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"
	"github.com/fluxcd/pkg/apis/meta"
	appsv1 "k8s.io/api/apps/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// Kubeconfig is the cluster's admin kubeconfig and context, as the provider wrote them.
func (b *Bed) Kubeconfig(cluster string) (string, string, error) {
	m, err := b.env.Member(cluster)
	if err != nil {
		return "", "", err
	}
	return m.Kubeconfig, m.Context, nil
}

// WaitDelivered returns once Flux in the clusters (every cluster when none is named) applied
// the revision; an error carries the GitRepository's own message.
func (b *Bed) WaitDelivered(ctx context.Context, revision string, clusters ...string) error {
	env := b.env
	if len(clusters) > 0 {
		some := *b.env
		some.Members = nil
		for _, name := range clusters {
			m, err := b.env.Member(name)
			if err != nil {
				return err
			}
			some.Members = append(some.Members, m)
		}
		env = &some
	}
	return datapath.WaitApplied(ctx, env, revision)
}

// Status checks the run's Git server and, in every cluster, the API server, Flux's
// Kustomization and the operator's Deployment. The report reads as the host bed's does.
func (b *Bed) Status(ctx context.Context) *testbed.Report {
	top := b.state.Topology
	r := &testbed.Report{Run: filepath.Base(b.opts.Dir), Dir: b.opts.Dir, Provider: top.Provider}
	if slices.Contains(top.Addons, topology.AddonGit) {
		rev, err := "", error(nil)
		if b.state.GitAddr == "" {
			err = errors.New("not started")
		} else {
			rev, err = gitrepo.Head(ctx, b.GitURL())
		}
		h := health(err, b.GitURL())
		r.Git, r.Revision = &h, rev
	}
	for _, m := range b.env.Members {
		cr := testbed.ClusterReport{Name: m.Name, Context: m.Context, Kubeconfig: m.Kubeconfig}
		cl, err := b.env.Client(m)
		cr.APIServer = health(apiReady(ctx, b, m.Name, err), "ready")
		if cr.APIServer.OK && slices.Contains(top.Addons, topology.AddonFlux) {
			h := health(kustomizationApplied(ctx, cl, r.Revision), "applied "+r.Revision)
			cr.Flux = &h
		}
		if cr.APIServer.OK && slices.Contains(top.Addons, topology.AddonOperator) {
			h := health(deploymentAvailable(ctx, cl, b.state.Operator), "healthy")
			cr.Operator = &h
		}
		r.Clusters = append(r.Clusters, cr)
	}
	return r
}

func health(err error, okDetail string) testbed.Health {
	if err != nil {
		return testbed.Health{Detail: err.Error()}
	}
	return testbed.Health{OK: true, Detail: okDetail}
}

func apiReady(ctx context.Context, b *Bed, cluster string, clientErr error) error {
	if clientErr != nil {
		return clientErr
	}
	cfg, err := b.AdminConfig(cluster)
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, fetchTimeout)
	defer cancel()
	_, err = cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx)
	return err
}

func kustomizationApplied(ctx context.Context, cl client.Client, revision string) error {
	ks := &kustomizev1.Kustomization{}
	if err := cl.Get(ctx, client.ObjectKey{Namespace: datapath.FluxNamespace, Name: datapath.FluxObjectName}, ks); err != nil {
		return err
	}
	ready := apimeta.FindStatusCondition(ks.Status.Conditions, meta.ReadyCondition)
	switch {
	case ready == nil:
		return errors.New("the Kustomization has no Ready condition")
	case ready.Status != metav1.ConditionTrue:
		return fmt.Errorf("the Kustomization is not Ready: %s: %s", ready.Reason, ready.Message)
	case revision != "" && ks.Status.LastAppliedRevision != revision:
		return fmt.Errorf("applied %s, Git is at %s", ks.Status.LastAppliedRevision, revision)
	}
	return nil
}

func deploymentAvailable(ctx context.Context, cl client.Client, op gitrepo.OperatorObject) error {
	var d appsv1.Deployment
	if err := cl.Get(ctx, client.ObjectKey{Namespace: op.Namespace, Name: op.Name}, &d); err != nil {
		return err
	}
	want := int32(1)
	if d.Spec.Replicas != nil {
		want = *d.Spec.Replicas
	}
	if want == 0 {
		return fmt.Errorf("Deployment %s/%s is scaled to 0 (fault start operator gives it back)", op.Namespace, op.Name)
	}
	if d.Status.AvailableReplicas < want {
		return fmt.Errorf("Deployment %s/%s: %d of %d replicas available", op.Namespace, op.Name, d.Status.AvailableReplicas, want)
	}
	return nil
}
