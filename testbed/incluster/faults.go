package incluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	kustomizev1 "github.com/fluxcd/kustomize-controller/api/v1"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// What the scenario harness needs of a run beyond Up and Down: whether one was left behind,
// the operator's names, and the faults it injects into an operator and the Git server. (The
// API server fault is the provider's Stop and Start.)

func init() { testbed.RegisterInjectors(provider.AddonsInCluster, faults.Faults()) }

// faults are the in-cluster bed's injectors: apiserver stops the cluster's node containers
// (everything in the cluster stops with it), operator scales its Deployment to zero with Flux
// told to leave it so, flux scales the cluster's Flux controllers to zero, git stops the bed's
// Git server, network partitions the cluster's nodes from the others'.
var faults = testbed.Injectors[*Bed]{
	testbed.FaultAPIServer: {Stop: (*Bed).StopAPIServer, Start: (*Bed).StartAPIServer},
	testbed.FaultOperator:  {Stop: (*Bed).StopOperator, Start: (*Bed).StartOperator},
	testbed.FaultFlux:      {Stop: (*Bed).StopFlux, Start: (*Bed).StartFlux},
	testbed.FaultGit: {
		Stop:  func(b *Bed, ctx context.Context, _ string) error { return b.StopGit(ctx) },
		Start: func(b *Bed, ctx context.Context, _ string) error { return b.StartGit(ctx) },
	},
	testbed.FaultNetwork: {Stop: (*Bed).Partition, Start: (*Bed).HealPartition},
}

// Annotations the test bed sets on an operator Deployment it stopped.
const (
	// FluxReconcileAnnotation set to kustomizev1.DisabledValue makes Flux leave the object
	// as it is in the cluster, so that its next apply does not scale the operator back up.
	FluxReconcileAnnotation = "kustomize.toolkit.fluxcd.io/reconcile"
	// StoppedReplicasAnnotation records the replicas a stopped operator had, for StartOperator.
	StoppedReplicasAnnotation = "testbed.polykube.kismet.io/stopped-replicas"
)

// Exists reports whether the run's directory records a run (for example one that a killed
// process left behind, with its clusters).
func (b *Bed) Exists() bool {
	_, err := os.Stat(statePath(b.opts.Dir))
	return err == nil
}

// Operator names the operator's Deployment and ServiceAccount as the seeded operator base
// has them (empty before Up seeded Git).
func (b *Bed) Operator() (deployment, serviceAccount gitrepo.OperatorObject) {
	return b.state.Operator, b.state.ServiceAccount
}

// StopOperator kills the operator of a cluster and keeps it down (see stopDeployment).
func (b *Bed) StopOperator(ctx context.Context, cluster string) error {
	op := b.state.Operator
	return b.stopDeployment(ctx, cluster, op.Namespace, op.Name, "the operator")
}

// StartOperator undoes StopOperator (see startDeployment).
func (b *Bed) StartOperator(ctx context.Context, cluster string) error {
	op := b.state.Operator
	return b.startDeployment(ctx, cluster, op.Namespace, op.Name, "the operator")
}

// The Flux controllers `flux install` runs in every cluster; the flux fault stops both.
var fluxControllers = []string{"source-controller", "kustomize-controller"}

// StopFlux stops a cluster's Flux controllers (see stopDeployment) and keeps them down, as
// the host bed stops their processes: nothing is fetched or applied in that cluster
// until StartFlux.
func (b *Bed) StopFlux(ctx context.Context, cluster string) error {
	var errs []error
	for _, name := range fluxControllers {
		errs = append(errs, b.stopDeployment(ctx, cluster, testbed.FluxNamespace, name, "Flux's "+name))
	}
	return errors.Join(errs...)
}

// StartFlux undoes StopFlux.
func (b *Bed) StartFlux(ctx context.Context, cluster string) error {
	var errs []error
	for _, name := range fluxControllers {
		errs = append(errs, b.startDeployment(ctx, cluster, testbed.FluxNamespace, name, "Flux's "+name))
	}
	return errors.Join(errs...)
}

// stopDeployment kills a Deployment's pods and keeps them down: it marks the Deployment for
// Flux to leave alone (an operator Flux delivered would otherwise be scaled back up by the
// next apply), records its replicas, scales it to zero, deletes its pods without a grace
// period (the process gets no chance to finish what it was doing) and waits until they are
// gone.
func (b *Bed) stopDeployment(ctx context.Context, cluster, namespace, name, what string) error {
	m, err := b.env.Member(cluster)
	if err != nil {
		return err
	}
	if !b.env.Runner.Note("in %s: annotate Deployment %s/%s %s=%s, scale it to 0, delete its pods with no grace period and wait until they are gone",
		m.Context, namespace, name, FluxReconcileAnnotation, kustomizev1.DisabledValue) {
		return nil
	}
	cl, err := b.env.Client(m)
	if err != nil {
		return err
	}
	var d appsv1.Deployment
	if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
		if apierrors.IsNotFound(err) {
			// Nothing runs it any more (Flux deleted it, with the Kustomization that applied
			// it): the fault is in effect once the pods it had are gone.
			return b.waitReplicaSetPodsGone(ctx, cl, cluster, namespace, name, what)
		}
		return fmt.Errorf("get the Deployment of %s in %s: %w", what, cluster, err)
	}
	before := d.DeepCopy()
	if _, stopped := d.Annotations[StoppedReplicasAnnotation]; !stopped {
		metav1.SetMetaDataAnnotation(&d.ObjectMeta, StoppedReplicasAnnotation, strconv.Itoa(int(ptrOr(d.Spec.Replicas, 1))))
	}
	metav1.SetMetaDataAnnotation(&d.ObjectMeta, FluxReconcileAnnotation, kustomizev1.DisabledValue)
	d.Spec.Replicas = ptr.To[int32](0)
	if err := cl.Patch(ctx, &d, client.MergeFrom(before)); err != nil {
		return fmt.Errorf("scale the Deployment of %s in %s to 0: %w", what, cluster, err)
	}
	sel, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return fmt.Errorf("the Deployment of %s in %s has an invalid selector: %w", what, cluster, err)
	}
	inNS, byLabel := client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: sel}
	if err := cl.DeleteAllOf(ctx, &corev1.Pod{}, inNS, byLabel, client.GracePeriodSeconds(0)); err != nil {
		return fmt.Errorf("kill the pods of %s in %s: %w", what, cluster, err)
	}
	return wait.For(ctx, b.env.Topology.Wait(topology.WaitRollout), fmt.Sprintf("the pods of %s in %s to be gone", what, cluster), func(ctx context.Context) error {
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, inNS, byLabel); err != nil {
			return err
		}
		if n := len(pods.Items); n > 0 {
			return fmt.Errorf("%d pods left, the first %s", n, pods.Items[0].Name)
		}
		return nil
	})
}

// waitReplicaSetPodsGone waits until no pod in namespace belongs to a ReplicaSet of the
// Deployment called name (a ReplicaSet the Deployment controller named <name>-<hash>), for a
// Deployment that is gone and whose pods the garbage collector is removing.
func (b *Bed) waitReplicaSetPodsGone(ctx context.Context, cl client.Client, cluster, namespace, name, what string) error {
	return wait.For(ctx, b.env.Topology.Wait(topology.WaitRollout), fmt.Sprintf("the pods of %s in %s (its Deployment deleted) to be gone", what, cluster), func(ctx context.Context) error {
		var pods corev1.PodList
		if err := cl.List(ctx, &pods, client.InNamespace(namespace)); err != nil {
			return err
		}
		for _, p := range pods.Items {
			for _, o := range p.OwnerReferences {
				if o.Kind == "ReplicaSet" && strings.HasPrefix(o.Name, name+"-") {
					return fmt.Errorf("pod %s is still there", p.Name)
				}
			}
		}
		return nil
	})
}

// startDeployment undoes stopDeployment: it gives the Deployment its replicas back, hands it
// back to Flux and waits until it is available.
func (b *Bed) startDeployment(ctx context.Context, cluster, namespace, name, what string) error {
	m, err := b.env.Member(cluster)
	if err != nil {
		return err
	}
	if b.env.Runner.Note("in %s: scale Deployment %s/%s back to its replicas and remove %s", m.Context, namespace, name, FluxReconcileAnnotation) {
		cl, err := b.env.Client(m)
		if err != nil {
			return err
		}
		var d appsv1.Deployment
		if err := cl.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &d); err != nil {
			return fmt.Errorf("get the Deployment of %s in %s: %w", what, cluster, err)
		}
		if recorded, stopped := d.Annotations[StoppedReplicasAnnotation]; stopped {
			replicas, err := strconv.Atoi(recorded)
			if err != nil {
				return fmt.Errorf("the Deployment of %s in %s has %s=%q, not a number", what, cluster, StoppedReplicasAnnotation, recorded)
			}
			// A JSON merge patch, so that null removes the annotations.
			patch := fmt.Appendf(nil, `{"metadata":{"annotations":{%q:null,%q:null}},"spec":{"replicas":%d}}`,
				StoppedReplicasAnnotation, FluxReconcileAnnotation, replicas)
			if err := cl.Patch(ctx, &d, client.RawPatch("application/merge-patch+json", patch)); err != nil {
				return fmt.Errorf("scale the Deployment of %s in %s back to %d: %w", what, cluster, replicas, err)
			}
		}
	}
	return b.WaitDeploymentIn(ctx, cluster, namespace, name)
}

// StopGit stops the run's Git server and waits until it no longer answers.
func (b *Bed) StopGit(ctx context.Context) error {
	w := b.env.Topology.Wait(topology.WaitProcess)
	if !b.env.Runner.Note("stop the Git server process and wait until %s no longer answers", b.GitURL()) {
		return nil
	}
	if err := b.procs.Stop(ctx, gitProc, false, w); err != nil {
		return err
	}
	return wait.For(ctx, w, "the Git server to stop answering", func(ctx context.Context) error {
		if _, err := gitrepo.Head(ctx, b.GitURL()); err == nil {
			return errors.New("the Git server still answers")
		}
		return nil
	})
}

// StartGit starts the run's Git server again, on the same address, and waits until it answers.
func (b *Bed) StartGit(ctx context.Context) error {
	if !b.env.Runner.Note("start the Git server process again and wait until it answers") {
		return nil
	}
	spec, err := b.procs.Spec(gitProc)
	if err != nil {
		return err
	}
	if _, err := b.procs.Restart(gitProc); err != nil {
		return err
	}
	if err := waitHTTP(ctx, b.env.Topology.Wait(topology.WaitProcess), spec.HealthURL); err != nil {
		return fmt.Errorf("%w (log: %s)", err, b.procs.LogPath(gitProc))
	}
	return nil
}

func ptrOr(p *int32, def int32) int32 {
	if p == nil {
		return def
	}
	return *p
}
