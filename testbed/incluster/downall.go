package incluster

import (
	"context"
	"io"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/internal/execx"
)

// downAllRunner runs the commands of an in-cluster run torn down by `polykube-testbed down --all`;
// nil runs them for real (tests fake the provider boundary with it).
var downAllRunner execx.Runner

// An in-cluster run's directory (datapath.json) is torn down by its own provider: deleting its
// kind or k0s clusters, then stopping its Git server. Opened as a kwok run instead, its Git
// server would be stopped and its state deleted with every node container left running.
func init() {
	testbed.RegisterRunKind(testbed.RunKind{Marker: stateFile, Down: func(ctx context.Context, dir string, log io.Writer) error {
		b, err := Open(Options{Dir: dir, Log: log, Runner: downAllRunner})
		if err != nil {
			return err
		}
		return b.Down(ctx)
	}})
}
