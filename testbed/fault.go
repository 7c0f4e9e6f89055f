package testbed

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Fault names something the test bed can break and repair.
type Fault string

// The faults. Each stop returns once the fault is in effect, each start once it is repaired.
const (
	FaultAPIServer Fault = "apiserver" // a cluster's control plane (kwokctl stop/start cluster)
	FaultOperator  Fault = "operator"  // a cluster's operator process (SIGKILL / start again)
	FaultFlux      Fault = "flux"      // a cluster's Flux controllers (with delivery argocd: its Argo CD controllers)
	FaultGit       Fault = "git"       // the federation's Git server (cluster is ignored)
	// FaultNetwork partitions a cluster: the traffic between its nodes and every other
	// cluster's is dropped (datapath providers only; kwok's clusters have no network).
	FaultNetwork Fault = "network"
)

// Faults lists every fault.
var Faults = []Fault{FaultAPIServer, FaultOperator, FaultFlux, FaultGit, FaultNetwork}

// ErrNoNetwork is the error of the network fault on a test bed whose provider cannot cut
// its clusters' networks (kwok and existing clusters have no network of the test bed's own;
// k0s's hosts are not the test bed's to firewall).
func ErrNoNetwork(prov string) error {
	return fmt.Errorf("the network fault drops the traffic between a cluster's nodes and the other clusters' nodes, which only the kind provider can do, and this run's provider is %s: bring the federation up with --provider kind: %w",
		prov, provider.ErrNotSupported)
}

// Stop puts the fault in effect for the cluster (the component stops).
func (tb *Testbed) Stop(ctx context.Context, f Fault, cluster string) error {
	if f != FaultGit {
		if _, err := tb.Cluster(cluster); err != nil {
			return err
		}
	}
	switch f {
	case FaultAPIServer:
		p, err := tb.Provider()
		if err != nil {
			return err
		}
		return p.Stop(ctx, cluster)
	case FaultOperator:
		return tb.procs.Stop(ctx, operatorProc(cluster), true, tb.wait(topology.WaitProcess))
	case FaultFlux:
		if tb.state.Topology.HasAddon(topology.AddonArgoCD) {
			return tb.stopArgoCD(ctx, cluster)
		}
		return errors.Join(
			tb.procs.Stop(ctx, sourceProc(cluster), false, tb.wait(topology.WaitProcess)),
			tb.procs.Stop(ctx, kustomizeProc(cluster), false, tb.wait(topology.WaitProcess)))
	case FaultNetwork:
		return ErrNoNetwork(tb.state.Topology.Provider)
	case FaultGit:
		if err := tb.procs.Stop(ctx, gitProc, false, tb.wait(topology.WaitProcess)); err != nil {
			return err
		}
		return wait.For(ctx, tb.wait(topology.WaitProcess), "the Git server to stop answering", func(ctx context.Context) error {
			if _, err := gitrepo.Head(ctx, tb.GitURL()); err == nil {
				return errors.New("the Git server still answers")
			}
			return nil
		})
	}
	return UnknownFault(f)
}

// Start ends the fault for the cluster (the component starts again).
func (tb *Testbed) Start(ctx context.Context, f Fault, cluster string) error {
	if f != FaultGit {
		if _, err := tb.Cluster(cluster); err != nil {
			return err
		}
	}
	switch f {
	case FaultAPIServer:
		p, err := tb.Provider()
		if err != nil {
			return err
		}
		return p.Start(ctx, cluster)
	case FaultOperator:
		// With a fresh token, as a new pod gets one: the ServiceAccount may have been
		// re-created meanwhile (its Kustomization deleted and re-applied), voiding the old.
		return tb.startOperator(ctx, cluster, true)
	case FaultFlux:
		if tb.state.Topology.HasAddon(topology.AddonArgoCD) {
			if tb.state.Topology.Delivery == topology.DeliveryArgoCDCentral {
				return errCentralFault
			}
			return tb.startArgoCD(ctx, cluster)
		}
		return tb.startFlux(ctx, cluster)
	case FaultNetwork:
		return ErrNoNetwork(tb.state.Topology.Provider)
	case FaultGit:
		spec, err := tb.procs.Spec(gitProc)
		if err != nil {
			return err
		}
		return tb.startProc(ctx, spec)
	}
	return UnknownFault(f)
}

// UnknownFault is the error for a fault the test bed does not know, naming those it does.
func UnknownFault(f Fault) error {
	names := make([]string, len(Faults))
	for i, f := range Faults {
		names[i] = string(f)
	}
	return fmt.Errorf("unknown fault %q: use one of %s", f, strings.Join(names, ", "))
}

// apiReachable reports whether a cluster's API server answers /readyz, in a few seconds.
func (tb *Testbed) apiReachable(ctx context.Context, cluster string) error {
	cl, err := tb.Cluster(cluster)
	if err != nil {
		return err
	}
	cfg, err := cl.RESTConfig()
	if err != nil {
		return err
	}
	cfg.Timeout = 3 * time.Second
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	if _, err := cs.Discovery().RESTClient().Get().AbsPath("/readyz").DoRaw(ctx); err != nil {
		return fmt.Errorf("unreachable: %w", errors.Unwrap(err))
	}
	return nil
}
