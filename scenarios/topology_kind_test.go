package scenarios

import (
	"path/filepath"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/scenarios/internal/harness"
	"github.com/polykube/polykube/testbed/topology"
)

// topology-kind.yaml is topology.yaml on kind: the feature files name the clusters and state
// their cluster IDs and networks, so both must agree on everything but the provider.
func TestTopologyKind_MatchesTheHermeticOne(t *testing.T) {
	g := NewWithT(t)
	kind, err := topology.Load("topology-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	hermetic, err := topology.Load("topology.yaml")
	g.Expect(err).NotTo(HaveOccurred())

	g.Expect(kind.Provider).To(Equal(topology.ProviderKind))
	g.Expect(harness.ProviderCapabilities(kind.Provider)).To(ContainElement(harness.CapabilityDatapath))
	g.Expect(kind.Name).To(Equal(hermetic.Name))
	g.Expect(kind.ClusterNames()).To(Equal(hermetic.ClusterNames()))
	for i, c := range kind.Clusters {
		h := hermetic.Clusters[i]
		g.Expect(c.ClusterID).To(Equal(h.ClusterID), c.Name)
		g.Expect(c.PodCIDRs).To(Equal(h.PodCIDRs), c.Name)
		g.Expect(c.ServiceCIDR).To(Equal(h.ServiceCIDR), c.Name)
		g.Expect(c.FakeNodes).To(BeZero(), "kind runs real nodes")
	}
	g.Expect(kind.Flux).To(Equal(hermetic.Flux))
}

// topology-kind-misnamed.yaml is topology-kind.yaml but for the one mistake it makes on purpose:
// Cilium in gamma goes by "gamma-prod". On it only the @misnamed-mesh scenarios run.
func TestTopologyKindMisnamed_DiffersOnlyByGammasMeshName(t *testing.T) {
	g := NewWithT(t)
	kind, err := topology.Load("topology-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	misnamed, err := topology.Load("topology-kind-misnamed.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(misnamed.Misnamed()).To(Equal([]string{"gamma"}))
	g.Expect(misnamed.Clusters[2].CiliumName()).To(Equal("gamma-prod"))
	misnamed.Clusters[2].MeshName = ""
	g.Expect(misnamed).To(Equal(kind))

	pickles, err := harness.LoadFeatures(featuresDir)
	g.Expect(err).NotTo(HaveOccurred())
	plan := planRun(pickles, "", topology.ProviderKind, topology.DeliveryFlux, harness.ProviderCapabilities(topology.ProviderKind), []string{"gamma"}, misnamed.Addons)
	var want int
	for _, p := range pickles {
		if p.HasTag("@misnamed-mesh") && !p.HasTag("@wip") {
			want++
		}
		g.Expect(harness.MatchTags(plan.tags, p.Tags)).To(Equal(p.HasTag("@misnamed-mesh") && !p.HasTag("@wip")), p.Name)
	}
	g.Expect(want).To(BeNumerically(">=", 1), "features/mesh-identity.feature tells the story")
	g.Expect(plan.toRun).To(Equal(want))
}

// topology-kind-isolated.yaml is topology-kind.yaml on networks that share nothing: the same
// clusters and add-ons, each cluster on its own network, joined by the WireGuard overlay.
func TestTopologyKindIsolated_DiffersOnlyByItsNetwork(t *testing.T) {
	g := NewWithT(t)
	kind, err := topology.Load("topology-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	isolated, err := topology.Load("topology-kind-isolated.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(isolated.Isolated()).To(BeTrue())
	g.Expect(isolated.Overlay).To(Equal(topology.OverlayWireGuard))
	isolated.Network, isolated.Overlay, isolated.OverlayPort, isolated.OverlayCIDR = kind.Network, "", 0, ""
	g.Expect(isolated).To(Equal(kind))
}

// On kind the plan runs the @datapath scenarios that kwok reports as not run, and everything
// the kwok plan runs: the @mesh-mirror ones too, with Cilium's own endpoint-slice
// synchronisation in place of the mirror (so no add-on), and the install ones (@registry) with
// topology-kind.yaml's registry, the operator in its pods; not the @host-operators ones (the
// upgrade on kwok), which swap operator processes that kind does not have; not the @prometheus
// ones, whose add-on runs beside kwok clusters only; not the @misnamed-mesh ones.
func TestPlanRun_KindRunsTheDatapathFeatures(t *testing.T) {
	g := NewWithT(t)
	pickles, err := harness.LoadFeatures(featuresDir)
	g.Expect(err).NotTo(HaveOccurred())
	var datapath, misnamedOnly, hostOperators, prometheus int
	for _, p := range pickles {
		if p.HasTag("@datapath") && !p.HasTag("@wip") {
			datapath++
		}
		if p.HasTag("@misnamed-mesh") && !p.HasTag("@wip") {
			misnamedOnly++
		}
		if p.HasTag("@host-operators") && !p.HasTag("@wip") {
			hostOperators++
		}
		if p.HasTag("@prometheus") && !p.HasTag("@wip") {
			prometheus++
		}
	}
	g.Expect(datapath).To(BeNumerically(">=", 3), "features/routing.feature has three scenarios")

	kwok := planRun(pickles, "", topology.ProviderKwok, topology.DeliveryFlux, harness.ProviderCapabilities(topology.ProviderKwok), nil, nil)
	kindTop, err := topology.Load("topology-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	kind := planRun(pickles, "", topology.ProviderKind, topology.DeliveryFlux, harness.ProviderCapabilities(topology.ProviderKind), nil, kindTop.Addons)
	g.Expect(prometheus).To(BeNumerically(">=", 1), "features/capacity-failover.feature has an alert scenario")
	// kind runs everything kwok runs but what only the test bed's mesh mirror, host operators
	// or Prometheus add-on can do.
	g.Expect(kind.toRun).To(Equal(kwok.toRun + datapath - misnamedOnly - hostOperators - prometheus))
	g.Expect(kind.tags).NotTo(ContainSubstring("@datapath"))
	g.Expect(kind.tags).To(ContainSubstring("~@prometheus"))
	g.Expect(kwok.addons).To(ConsistOf(topology.AddonMeshMirror, topology.AddonPrometheus, topology.AddonRegistry),
		"features/capacity-failover.feature needs the mesh mirror and Prometheus on kwok, features/install-from-registry.feature the registry")
	g.Expect(kind.addons).To(BeEmpty())
	for _, n := range kind.notRun {
		g.Expect(n.reason).NotTo(HavePrefix("needs datapath"), n.name)
	}
	var routing int
	for _, p := range pickles {
		if strings.Contains(p.Location, "routing.feature") {
			g.Expect(harness.MatchTags(kind.tags, p.Tags)).To(BeTrue(), "%s runs on kind", p.Name)
			g.Expect(harness.MatchTags(kwok.tags, p.Tags)).To(BeFalse(), "%s does not run on kwok", p.Name)
			routing++
		}
	}
	g.Expect(routing).To(Equal(7))
	// The install features run on kind, as on kwok: the operator's rollout is the install.
	var install int
	for _, p := range pickles {
		if strings.Contains(p.Location, "install-from-registry.feature") || strings.Contains(p.Location, "install-with-helm-or-kubectl.feature") {
			g.Expect(harness.MatchTags(kind.tags, p.Tags)).To(BeTrue(), "%s runs on kind", p.Name)
			g.Expect(harness.MatchTags(kwok.tags, p.Tags)).To(BeTrue(), "%s runs on kwok", p.Name)
			install++
		}
	}
	g.Expect(install).To(Equal(4))
}

func TestSelectTopology(t *testing.T) {
	g := NewWithT(t)
	cfg, err := harness.LoadConfig(configFile)
	g.Expect(err).NotTo(HaveOccurred())
	defaultFile := cfg.Topology

	t.Setenv(harness.TopologyEnv, "")
	file, err := harness.SelectTopology(cfg, configFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file).To(Equal(defaultFile))

	t.Setenv(harness.TopologyEnv, "topology-kind.yaml")
	file, err = harness.SelectTopology(cfg, configFile)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(file).To(Equal(filepath.Join(filepath.Dir(configFile), "topology-kind.yaml")))
	g.Expect(cfg.Topology).To(Equal(file), "the configuration names the topology it runs with")
	top, err := topology.Load(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(top.Provider).To(Equal(topology.ProviderKind))

	t.Setenv(harness.TopologyEnv, "topology-k0s.yaml")
	file, err = harness.SelectTopology(cfg, configFile)
	g.Expect(err).NotTo(HaveOccurred())
	top, err = topology.Load(file)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(top.Provider).To(Equal(topology.ProviderK0s))

	t.Setenv(harness.TopologyEnv, "topology-nomad.yaml")
	_, err = harness.SelectTopology(cfg, configFile)
	g.Expect(err).To(MatchError(ContainSubstring("$POLYKUBE_SCENARIO_TOPOLOGY names topology-nomad.yaml")))
}

// topology-k0s.yaml is topology-kind.yaml on k0s: the same clusters, networks and add-ons, the
// registry among them.
func TestTopologyK0s_IsTheKindOneOnK0s(t *testing.T) {
	g := NewWithT(t)
	kind, err := topology.Load("topology-kind.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	k0s, err := topology.Load("topology-k0s.yaml")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(k0s.Provider).To(Equal(topology.ProviderK0s))
	g.Expect(harness.ProviderCapabilities(k0s.Provider)).To(ContainElement(harness.CapabilityDatapath))
	// The @partition scenarios run on kind only: k0s has no network fault.
	g.Expect(harness.ProviderCapabilities(k0s.Provider)).NotTo(ContainElement(harness.CapabilityPartition))
	g.Expect(harness.ProviderCapabilities(topology.ProviderKind)).To(ContainElement(harness.CapabilityPartition))
	k0s.Provider = topology.ProviderKind
	for i := range k0s.Clusters {
		g.Expect(k0s.Clusters[i].Provider).To(Equal(topology.ProviderK0s))
		k0s.Clusters[i].Provider = topology.ProviderKind
	}
	g.Expect(k0s.Addons).To(ContainElement(topology.AddonRegistry))
	g.Expect(k0s).To(Equal(kind))
}
