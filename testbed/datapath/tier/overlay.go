package tier

import (
	"context"
	"fmt"
	"path/filepath"

	"github.com/polykube/polykube/testbed/internal/gobuild"
	"github.com/polykube/polykube/testbed/overlay"
	"github.com/polykube/polykube/testbed/provider/kind"
)

// startOverlay puts the WireGuard overlay on every node of an isolated topology (the kind
// provider's StartOverlay, with the test-bed binary built static for the nodes) and keeps the
// overlay interface's MTU for Cilium.
func (b *Bed) startOverlay(ctx context.Context) error {
	kp, ok := b.prov.(*kind.Provider)
	if !ok {
		return fmt.Errorf("network: isolated needs provider kind, not %s: set provider: kind in the topology", b.prov.Name())
	}
	if !b.env.Runner.Note("build polykube-testbed with cgo off, copy it into every node and start its WireGuard agent there (overlay-key, serve-overlay-agent), peers from the roster") {
		mtus, err := overlay.ComputeMTU(1500, false)
		if err != nil {
			return err
		}
		b.overlayMTU = mtus.WireGuard
		return nil
	}
	bin, err := gobuild.BuildStatic(ctx, b.opts.SourceDir, "./testbed/cmd/polykube-testbed", filepath.Join(b.opts.Dir, ".bin"))
	if err != nil {
		return err
	}
	nodes, err := kp.StartOverlay(ctx, bin)
	if err != nil {
		return err
	}
	underlay := 0
	for _, n := range nodes {
		fmt.Fprintf(b.opts.Out, "   %s: %s\n", n.Node, n.Status)
		if underlay == 0 || n.UnderlayMTU < underlay {
			underlay = n.UnderlayMTU
		}
	}
	mtus, err := overlay.ComputeMTU(underlay, false)
	if err != nil {
		return err
	}
	b.overlayMTU = mtus.WireGuard
	return nil
}
