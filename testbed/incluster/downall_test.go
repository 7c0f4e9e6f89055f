package incluster

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	. "github.com/onsi/gomega"

	hostbed "github.com/polykube/polykube/testbed/host"
	"github.com/polykube/polykube/testbed/internal/execx"
	"github.com/polykube/polykube/testbed/topology"
)

// fakeKind records the kind clusters a teardown deletes and runs nothing: the provider
// boundary is faked (no Docker here in `make test`), everything above it is real.
type fakeKind struct {
	mu      sync.Mutex
	deleted []string
	ran     []string
}

func (f *fakeKind) Run(_ context.Context, c execx.Cmd) ([]byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.ran = append(f.ran, c.String())
	return nil, nil
}

func (f *fakeKind) DryRun() bool { return false }

func (f *fakeKind) Note(format string, args ...any) bool {
	if name, ok := strings.CutPrefix(fmt.Sprintf(format, args...), "delete kind cluster "); ok {
		f.mu.Lock()
		f.deleted = append(f.deleted, name)
		f.mu.Unlock()
		return false // the provider boundary: kind itself is not called
	}
	return true
}

// `down --all` over a state root with a kwok run and a kind run: the kind run is torn down
// by its own provider, kind (each of its clusters deleted), not opened as a kwok run
// (which would only stop its Git server and delete its state, leaving its nodes running).
func TestDownAll_EachRunByItsOwnProvider(t *testing.T) {
	g := NewWithT(t)
	root := t.TempDir()
	top := topology.Default()
	top.Provider = topology.ProviderKind
	kindDir := filepath.Join(root, "polykube-kind")
	g.Expect(os.MkdirAll(kindDir, 0o755)).To(Succeed())
	data, err := json.Marshal(State{Topology: top})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(os.WriteFile(filepath.Join(kindDir, stateFile), data, 0o644)).To(Succeed())
	// A kwok run that an interrupted `up` left half-made: nothing but its directory.
	kwokDir := filepath.Join(root, "scenarios")
	g.Expect(os.MkdirAll(filepath.Join(kwokDir, "procs"), 0o755)).To(Succeed())

	fake := &fakeKind{}
	downAllRunner = fake
	t.Cleanup(func() { downAllRunner = nil })

	runs, err := hostbed.DownAll(context.Background(), hostbed.Options{StateRoot: root, Log: io.Discard})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(runs).To(ConsistOf("polykube-kind", "scenarios"))
	g.Expect(fake.deleted).To(ConsistOf(top.ClusterNames()), "every kind cluster of the run is deleted by the kind provider")
	g.Expect(kindDir).NotTo(BeADirectory())
	g.Expect(kwokDir).NotTo(BeADirectory())
}
