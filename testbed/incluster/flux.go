package incluster

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/datapath"
	"github.com/polykube/polykube/testbed/topology"
)

func (b *Bed) upFlux(ctx context.Context) error {
	if err := b.installFlux(ctx); err != nil {
		return err
	}
	if err := datapath.ApplyFluxObjects(ctx, b.env, b.GitURL()); err != nil {
		return err
	}
	return datapath.WaitApplied(ctx, b.env, b.state.Seeded)
}

// installFlux installs the source and kustomize controllers: with upstream images by the flux
// CLI, with local ones from the test bed's manifests and the CRDs of the controllers' modules.
func (b *Bed) installFlux(ctx context.Context) error {
	if b.state.Topology.Images != datapath.ImagesLocal {
		return datapath.InstallFlux(ctx, b.env)
	}
	var crds string
	if !b.env.Runner.DryRun() {
		var err error
		if crds, err = toolchain.FluxCRDs(ctx); err != nil {
			return err
		}
	}
	return datapath.InstallFluxLocal(ctx, b.env, datapath.LocalFluxImages(), crds, func(ctx context.Context, cl client.Client, dir string) error {
		return testbed.ApplyCRDDir(ctx, cl, dir, b.state.Topology.Wait(topology.WaitCRDs))
	})
}
