package host

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/provider"
	"github.com/polykube/polykube/testbed/topology"
)

// recordingProvider is a provider a test registers as a new provider would: it records what
// the bed asks of it and creates nothing.
type recordingProvider struct {
	name string
	mu   sync.Mutex
	// calls are "create NAME" and "delete NAME", in order.
	calls []string
}

var errNoClusters = errors.New("the recording provider creates no clusters")

func (p *recordingProvider) record(c string) {
	p.mu.Lock()
	p.calls = append(p.calls, c)
	p.mu.Unlock()
}

func (p *recordingProvider) Name() string { return p.name }
func (p *recordingProvider) Capabilities() []provider.Capability {
	return []provider.Capability{"recorded"}
}
func (p *recordingProvider) Create(_ context.Context, c topology.Cluster) (*provider.Cluster, error) {
	p.record("create " + c.Name)
	return nil, errNoClusters
}
func (p *recordingProvider) Delete(_ context.Context, name string) error {
	p.record("delete " + name)
	return nil
}
func (p *recordingProvider) Stop(context.Context, string) error  { return provider.ErrNotSupported }
func (p *recordingProvider) Start(context.Context, string) error { return provider.ErrNotSupported }
func (p *recordingProvider) Kubeconfig(_ context.Context, name string) (*provider.Cluster, error) {
	return nil, fmt.Errorf("cluster %s: %w", name, errNoClusters)
}

// List is what a real provider lists: the clusters it began to create and has not deleted.
func (p *recordingProvider) List(context.Context) ([]string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var names []string
	for _, c := range p.calls {
		if name, ok := strings.CutPrefix(c, "create "); ok {
			names = append(names, name)
		} else if name, ok := strings.CutPrefix(c, "delete "); ok {
			names = slices.DeleteFunc(names, func(n string) bool { return n == name })
		}
	}
	return names, nil
}

// TestRegister_ANewProviderNeedsNoOtherChange registers a provider the way a new provider
// package does (one provider.Register call) and checks that the test bed then plans, opens,
// brings up and removes its runs through the bed of its placement, with nothing else told
// about it.
func TestRegister_ANewProviderNeedsNoOtherChange(t *testing.T) {
	g := gomega.NewWithT(t)
	rec := &recordingProvider{name: "recording"}
	var setups []provider.Setup
	provider.Register(provider.Registration{
		Name: rec.name, Capabilities: rec.Capabilities(), Placements: []provider.Placement{provider.AddonsOnHost},
		New: func(s provider.Setup) (provider.Provider, error) { setups = append(setups, s); return rec, nil },
	})
	provider.Register(provider.Registration{
		Name: "recording-in-cluster", Placements: []provider.Placement{provider.AddonsInCluster},
		New: func(provider.Setup) (provider.Provider, error) { return rec, nil },
	})
	g.Expect(provider.Names()).To(gomega.ContainElements("kwok", "kind", "k0s", "existing", "recording"))

	caps, ok := testbed.BedCapabilities(rec.name)
	g.Expect(ok).To(gomega.BeTrue())
	g.Expect(caps).To(gomega.Equal([]provider.Capability{"recorded"}))
	_, ok = testbed.BedCapabilities("minikube")
	g.Expect(ok).To(gomega.BeFalse())
	g.Expect(testbed.ProviderFlag(&topology.Topology{Provider: rec.name})).To(gomega.BeEmpty(), "a host-placement run is kept by name, as kwok's")
	g.Expect(testbed.ProviderFlag(&topology.Topology{Provider: "recording-in-cluster"})).To(gomega.Equal(" --provider recording-in-cluster"))
	// A placement the provider does not register is refused, naming the one it has.
	_, err := provider.PlacementOf(&topology.Topology{Provider: rec.name, AddonPlacement: topology.PlacementCluster})
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("provider recording cannot run the add-ons in cluster (its clusters run no real pods); use host")))

	root := t.TempDir()
	top := twoClusters(t, "git")
	log := &syncBuffer{}
	var b testbed.Bed
	b, err = testbed.OpenBed(testbed.BedOptions{Provider: rec.name, Topology: top, StateRoot: root, Log: log})
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(b).To(gomega.BeAssignableToTypeOf(Bed{}))
	g.Expect(b.Topology().Provider).To(gomega.Equal(rec.name))

	err = b.Up(context.Background())
	g.Expect(err).To(gomega.MatchError(errNoClusters))
	g.Expect(log.String()).To(gomega.ContainSubstring("Creating 2 recording clusters"))
	g.Expect(setups).To(gomega.HaveLen(1))
	g.Expect(setups[0].Dir).To(gomega.Equal(filepath.Join(root, top.Name, "clusters")))
	g.Expect(setups[0].Runner).NotTo(gomega.BeNil())
	// The failed Up removed what it made, through the provider.
	rec.mu.Lock()
	calls := slices.Clone(rec.calls)
	rec.mu.Unlock()
	g.Expect(calls).To(gomega.ContainElements("create aws-eu-central-1", "create gcp-europe-west3", "delete aws-eu-central-1", "delete gcp-europe-west3"))
	expectGone(g, filepath.Join(root, top.Name))

	// No bed in this program runs add-ons in clusters (testbed/incluster is not
	// imported by this package's tests): the error says so instead of guessing.
	_, err = testbed.OpenBed(testbed.BedOptions{Provider: "recording-in-cluster", StateRoot: root, Log: log})
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring("runs its add-ons in its clusters, and this program has no such bed")))
	g.Expect(errors.Is(err, provider.ErrNotSupported)).To(gomega.BeTrue())
	_, err = testbed.OpenBed(testbed.BedOptions{Provider: "minikube", StateRoot: root, Log: log})
	g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(`unknown provider "minikube"`)))
}

func TestRegister_RefusesAnIncompleteOrSecondRegistration(t *testing.T) {
	g := gomega.NewWithT(t)
	newP := func(provider.Setup) (provider.Provider, error) { return nil, nil }
	g.Expect(func() {
		provider.Register(provider.Registration{Name: "kwok", Placements: []provider.Placement{provider.AddonsOnHost}, New: newP})
	}).To(gomega.PanicWith(gomega.ContainSubstring("registered twice")))
	g.Expect(func() { provider.Register(provider.Registration{Name: "half", New: newP}) }).To(gomega.PanicWith(gomega.ContainSubstring("needs a name, a constructor and a placement")))
}

// The providers a message names come from the registry: those whose add-ons run in their
// clusters by default, joined for a sentence and for flags; a newly registered one is named too.
func TestRefuseInClusterOptions_NamesTheRegisteredInClusterProviders(t *testing.T) {
	g := gomega.NewWithT(t)
	g.Expect(provider.Join([]string{"a"}, "or", "--provider ")).To(gomega.Equal("--provider a"))
	g.Expect(provider.Join([]string{"a", "b", "c"}, "and", "")).To(gomega.Equal("a, b and c"))
	g.Expect(provider.NamesAt(provider.AddonsInCluster)).To(gomega.ContainElements("k0s", "kind"))
	g.Expect(provider.NamesAt(provider.AddonsInCluster)).NotTo(gomega.ContainElements("kwok", "existing"))

	err := refuseInClusterOptions(testbed.BedOptions{DryRun: true})
	g.Expect(err).To(gomega.MatchError(gomega.HavePrefix("--dry-run: only the k0s")))
	g.Expect(err.Error()).To(gomega.ContainSubstring("add --provider k0s"))
	g.Expect(err.Error()).To(gomega.ContainSubstring("--provider kind"))
	g.Expect(err.Error()).To(gomega.HaveSuffix(", or drop it for kwok"))

	provider.Register(provider.Registration{Name: "zz-refuse-in-cluster", Placements: []provider.Placement{provider.AddonsInCluster},
		New: func(provider.Setup) (provider.Provider, error) { return nil, errNoClusters }})
	err = refuseInClusterOptions(testbed.BedOptions{DryRun: true})
	g.Expect(err.Error()).To(gomega.ContainSubstring(" or --provider zz-refuse-in-cluster, or drop it for kwok"))
}
