package host

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
	"github.com/polykube/polykube/testbed/wait"
)

// Stop puts the fault in effect for the cluster (the component stops).
func (tb *Testbed) Stop(ctx context.Context, f testbed.Fault, cluster string) error {
	return hostFaults.Inject(ctx, tb, tb.faultRun(), true, f, cluster)
}

// Start ends the fault for the cluster (the component starts again).
func (tb *Testbed) Start(ctx context.Context, f testbed.Fault, cluster string) error {
	return hostFaults.Inject(ctx, tb, tb.faultRun(), false, f, cluster)
}

func (tb *Testbed) faultRun() testbed.FaultRun {
	return testbed.FaultRun{Provider: tb.state.Topology.Provider, Cluster: func(name string) error {
		_, err := tb.Cluster(name)
		return err
	}}
}

func init() { testbed.RegisterInjectors(provider.AddonsOnHost, hostFaults.Faults()) }

// hostFaults are the injectors of the bed whose add-ons run as host processes.
var hostFaults = testbed.Injectors[*Testbed]{
	testbed.FaultAPIServer: {
		Stop: func(tb *Testbed, ctx context.Context, cluster string) error {
			p, err := tb.Provider()
			if err != nil {
				return err
			}
			return p.Stop(ctx, cluster)
		},
		Start: func(tb *Testbed, ctx context.Context, cluster string) error {
			p, err := tb.Provider()
			if err != nil {
				return err
			}
			return p.Start(ctx, cluster)
		},
	},
	testbed.FaultOperator: {
		Stop: func(tb *Testbed, ctx context.Context, cluster string) error {
			return tb.procs.Stop(ctx, operatorProc(cluster), true, tb.wait(topology.WaitProcess))
		},
		// With a fresh token, as a new pod gets one: the ServiceAccount may have been
		// re-created meanwhile (its Kustomization deleted and re-applied), voiding the old.
		Start: func(tb *Testbed, ctx context.Context, cluster string) error {
			return tb.startOperator(ctx, cluster, true)
		},
	},
	testbed.FaultFlux: {
		Stop: func(tb *Testbed, ctx context.Context, cluster string) error {
			if tb.state.Topology.HasAddon(topology.AddonArgoCD) {
				return tb.stopArgoCD(ctx, cluster)
			}
			return errors.Join(
				tb.procs.Stop(ctx, sourceProc(cluster), false, tb.wait(topology.WaitProcess)),
				tb.procs.Stop(ctx, kustomizeProc(cluster), false, tb.wait(topology.WaitProcess)))
		},
		Start: func(tb *Testbed, ctx context.Context, cluster string) error {
			if tb.state.Topology.HasAddon(topology.AddonArgoCD) {
				if tb.state.Topology.Delivery == topology.DeliveryArgoCDCentral {
					return errCentralFault
				}
				return tb.startArgoCD(ctx, cluster)
			}
			return tb.startFlux(ctx, cluster)
		},
	},
	testbed.FaultGit: {
		Stop: func(tb *Testbed, ctx context.Context, _ string) error {
			if err := tb.procs.Stop(ctx, gitProc, false, tb.wait(topology.WaitProcess)); err != nil {
				return err
			}
			return wait.For(ctx, tb.wait(topology.WaitProcess), "the Git server to stop answering", func(ctx context.Context) error {
				if _, err := gitrepo.Head(ctx, tb.GitURL()); err == nil {
					return errors.New("the Git server still answers")
				}
				return nil
			})
		},
		Start: func(tb *Testbed, ctx context.Context, _ string) error {
			spec, err := tb.procs.Spec(gitProc)
			if err != nil {
				return err
			}
			return tb.startProc(ctx, spec)
		},
	},
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
