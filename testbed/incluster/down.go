package incluster

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/polykube/polykube/testbed/topology"
)

// Down deletes the clusters (or, in clusters the bed was given, takes out what it installed)
// and stops the Git server.
func (b *Bed) Down(ctx context.Context) error {
	var errs []error
	if err := b.uninstall(ctx); err != nil {
		// The Git server and the state are kept: Down can be run again once the clusters answer.
		return fmt.Errorf("take Flux and Polykube out of the %s clusters: %w", b.prov.Name(), err)
	}
	for _, m := range b.env.Members {
		if err := b.prov.Delete(ctx, m.Name); err != nil {
			errs = append(errs, err)
		}
	}
	if b.env.Runner.Note("stop the Git server and remove %s", b.opts.Dir) {
		if err := b.procs.StopAll(ctx, b.env.Topology.Wait(topology.WaitProcess)); err != nil {
			errs = append(errs, err)
		}
		if len(errs) == 0 {
			errs = append(errs, os.RemoveAll(b.opts.Dir))
		}
	}
	return errors.Join(errs...)
}
