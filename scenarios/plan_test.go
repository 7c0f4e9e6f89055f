package scenarios

import (
	"slices"
	"strings"
	"testing"

	"github.com/polykube/polykube/scenarios/internal/harness"
	"github.com/polykube/polykube/testbed/topology"
)

func TestPlanRun(t *testing.T) {
	const (
		argoOnly     = "needs delivery argocd (POLYKUBE_SCENARIO_TOPOLOGY=topology-argocd.yaml)"
		centralOnly  = "needs delivery argocd-central (POLYKUBE_SCENARIO_TOPOLOGY=topology-argocd-central.yaml)"
		soak         = "@soak (as long as it is told to run: make soak, or --godog.tags=@soak)"
		misnamedOnly = "needs a cluster whose Cilium goes by another name, which real Cilium takes only at install (@misnamed-mesh: POLYKUBE_SCENARIO_TOPOLOGY=topology-kind-misnamed.yaml on kind)"
		namesRight   = "needs a mesh whose names are right (this topology installs Cilium in gamma under another name on purpose and runs the @misnamed-mesh scenarios; topology-kind.yaml runs the rest)"
		fluxOnly     = "delivered by Flux (this run delivers with Argo CD and runs the @argocd scenarios; the default topology runs the rest)"
		fluxOnlyC    = "delivered by Flux (this run delivers with Argo CD and runs the @argocd-central scenarios; the default topology runs the rest)"
	)
	const (
		misnamedOnlyK0s = "needs a cluster whose Cilium goes by another name, which real Cilium takes only at install (@misnamed-mesh: POLYKUBE_SCENARIO_TOPOLOGY=topology-kind-misnamed.yaml on k0s)"
		noRegistryK0s   = "needs the registry add-on, which this k0s topology does not run (add it where the provider can point its nodes' containerd at it, as topology-kind.yaml and topology-k0s.yaml do)"
	)
	kindAddons := []string{topology.AddonRegistry, topology.AddonGit, topology.AddonFlux, topology.AddonOperator}
	pickles := []harness.Pickle{
		{Name: "h", Tags: []string{"@hermetic"}},
		{Name: "s", Tags: []string{"@hermetic", "@slow"}},
		{Name: "w", Tags: []string{"@hermetic", "@wip"}, WIPReason: "testbed"},
		{Name: "d", Tags: []string{"@datapath"}},
		{Name: "m", Tags: []string{"@hermetic", "@slow", "@mesh-mirror"}},
		{Name: "a", Tags: []string{"@hermetic", "@argocd"}},
		{Name: "k", Tags: []string{"@hermetic", "@soak"}},
		{Name: "r", Tags: []string{"@hermetic", "@slow", "@mesh-mirror", "@misnamed-mesh"}},
		{Name: "g", Tags: []string{"@hermetic", "@registry"}},
		{Name: "c", Tags: []string{"@hermetic", "@argocd-central"}},
	}
	tests := []struct {
		tags, provider, delivery string
		caps                     []string
		misnamed                 []string
		wantTags                 string
		wantRun                  int
		wantNotRun               []string
		wantAddons               []string
		// addons are the topology's (topology-kind.yaml has the registry).
		addons []string
	}{
		{"", "kwok", "flux", nil, nil, "~@argocd && ~@argocd-central && ~@datapath && ~@wip && ~@soak", 5, []string{"@wip (testbed)", "needs datapath (provider kwok)", argoOnly, soak, centralOnly}, []string{"mesh-mirror", "registry"}, nil},
		{"~@slow", "kwok", "flux", nil, nil, "~@slow && ~@argocd && ~@argocd-central && ~@datapath && ~@wip && ~@soak", 2, []string{"@wip (testbed)", "needs datapath (provider kwok)", argoOnly, soak, centralOnly}, []string{"registry"}, nil},
		{"@wip", "kwok", "flux", nil, nil, "@wip && ~@argocd && ~@argocd-central && ~@datapath && ~@soak", 1, nil, nil, nil},
		{"@datapath", "kind", "flux", []string{harness.CapabilityDatapath, harness.CapabilityPartition}, nil, "@datapath && ~@argocd && ~@argocd-central && ~@misnamed-mesh && ~@prometheus && ~@wip && ~@soak && ~@host-operators", 1, nil, nil, kindAddons},
		// On kind Cilium mirrors: the @mesh-mirror scenario runs, with no add-on.
		// A @misnamed-mesh scenario is not run there, and says why.
		{"@hermetic", "kind", "flux", []string{harness.CapabilityDatapath, harness.CapabilityPartition}, nil, "@hermetic && ~@argocd && ~@argocd-central && ~@misnamed-mesh && ~@prometheus && ~@wip && ~@soak && ~@host-operators", 4, []string{"@wip (testbed)", argoOnly, soak, misnamedOnly, centralOnly}, nil, kindAddons},
		// On a k0s topology without the registry, the @registry scenario is not run, and says why.
		{"@hermetic", "k0s", "flux", []string{harness.CapabilityDatapath}, nil, "@hermetic && ~@argocd && ~@argocd-central && ~@misnamed-mesh && ~@prometheus && ~@partition && ~@wip && ~@soak && ~@host-operators && ~@registry", 3, []string{"@wip (testbed)", argoOnly, soak, misnamedOnlyK0s, noRegistryK0s, centralOnly}, nil, nil},
		{"@none", "kwok", "flux", nil, nil, "@none && ~@argocd && ~@argocd-central && ~@datapath && ~@wip && ~@soak", 0, nil, nil, nil},
		// On a topology that installs Cilium in gamma under another name only the
		// @misnamed-mesh scenarios run; the rest say why not.
		{"", "kind", "flux", []string{harness.CapabilityDatapath, harness.CapabilityPartition}, []string{"gamma"}, "~@argocd && ~@argocd-central && @misnamed-mesh && ~@prometheus && ~@wip && ~@soak && ~@host-operators", 1, []string{namesRight, namesRight, "@wip (testbed)", namesRight, namesRight, argoOnly, soak, namesRight, centralOnly}, nil, kindAddons},
		// Asked for, the soak runs (and only it).
		{"@soak", "kwok", "flux", nil, nil, "@soak && ~@argocd && ~@argocd-central && ~@datapath && ~@wip", 1, nil, nil, nil},
		// With Argo CD delivery only the @argocd scenarios run; the others are Flux's run's.
		{"", "kwok", "argocd", nil, nil, "@argocd && ~@argocd-central && ~@datapath && ~@wip && ~@soak", 1, []string{fluxOnly, fluxOnly, fluxOnly, fluxOnly, fluxOnly, fluxOnly, fluxOnly, fluxOnly, centralOnly}, nil, nil},
		// With the central Argo CD only the @argocd-central scenarios run; the other shape's
		// say which topology runs them.
		{"", "kwok", "argocd-central", nil, nil, "~@argocd && @argocd-central && ~@datapath && ~@wip && ~@soak", 1, []string{fluxOnlyC, fluxOnlyC, fluxOnlyC, fluxOnlyC, fluxOnlyC, argoOnly, fluxOnlyC, fluxOnlyC, fluxOnlyC}, nil, nil},
	}
	for _, tt := range tests {
		p := planRun(pickles, tt.tags, tt.provider, tt.delivery, tt.caps, tt.misnamed, tt.addons)
		if p.tags != tt.wantTags || p.toRun != tt.wantRun || len(p.notRun) != len(tt.wantNotRun) || !slices.Equal(p.addons, tt.wantAddons) {
			t.Errorf("planRun(%q, %s) = tags %q, %d to run, not run %v, add-ons %v; want %q, %d, %v, %v", tt.tags, tt.provider, p.tags, p.toRun, p.notRun, p.addons, tt.wantTags, tt.wantRun, tt.wantNotRun, tt.wantAddons)
			continue
		}
		for i, n := range p.notRun {
			if n.reason != tt.wantNotRun[i] {
				t.Errorf("planRun(%q): not run reason %q, want %q", tt.tags, n.reason, tt.wantNotRun[i])
			}
		}
		// What godog will run must be exactly what the plan counts.
		ran := 0
		for _, pk := range pickles {
			if harness.MatchTags(p.tags, pk.Tags) {
				ran++
			}
		}
		if ran != tt.wantRun {
			t.Errorf("planRun(%q): the expression %q selects %d, the plan counts %d", tt.tags, p.tags, ran, tt.wantRun)
		}
	}
}

func TestQuotedList(t *testing.T) {
	got, err := quotedList(`"alpha", "beta" and "gamma"`)
	if err != nil || len(got) != 3 || got[2] != "gamma" {
		t.Errorf("quotedList = %v, %v", got, err)
	}
	if _, err := quotedList(`alpha and beta`); err == nil {
		t.Error("quotedList accepted names without quotes")
	}
}

// The upgrade scenario swaps operator binaries, which only kwok's host processes allow: on
// kind it is reported as not run, with the reason, not failed.
func TestPlanRun_HostOperatorsOnKwokOnly(t *testing.T) {
	pickles := []harness.Pickle{{Name: "u", Tags: []string{"@hermetic", "@host-operators"}}}
	kwok := planRun(pickles, "", "kwok", "flux", nil, nil, nil)
	if kwok.toRun != 1 || len(kwok.notRun) != 0 {
		t.Errorf("on kwok: %d to run, not run %v; want 1 and none", kwok.toRun, kwok.notRun)
	}
	kind := planRun(pickles, "", "kind", "flux", []string{harness.CapabilityDatapath, harness.CapabilityPartition}, nil, []string{topology.AddonRegistry})
	if kind.toRun != 0 || len(kind.notRun) != 1 || kind.notRun[0].reason != "needs operators run as host processes (provider kwok; this run's is kind)" {
		t.Errorf("on kind: %d to run, not run %v; want 0 and the reason", kind.toRun, kind.notRun)
	}
	if harness.MatchTags(kind.tags, pickles[0].Tags) {
		t.Errorf("on kind the tags %q select the @host-operators scenario", kind.tags)
	}
}

// The install scenarios (@registry) publish a release to the test bed's registry: on kwok the
// run brings the add-on up for them; on kind and k0s they run where the topology has it, with
// the operator in its pods (no add-on to add); on a topology without it (k0s on SSH hosts,
// whose containerd the test bed does not configure) they are reported as not run, with the
// reason, rather than selected and failed.
func TestPlanRun_RegistryWhereTheTopologyRunsIt(t *testing.T) {
	pickles := []harness.Pickle{{Name: "i", Tags: []string{"@hermetic", "@registry"}}}
	kwok := planRun(pickles, "", "kwok", "flux", nil, nil, nil)
	if kwok.toRun != 1 || len(kwok.notRun) != 0 || !slices.Equal(kwok.addons, []string{topology.AddonRegistry}) {
		t.Errorf("on kwok: %d to run, not run %v, add-ons %v; want 1, none, the registry", kwok.toRun, kwok.notRun, kwok.addons)
	}
	kind := planRun(pickles, "", "kind", "flux", []string{harness.CapabilityDatapath, harness.CapabilityPartition}, nil, []string{topology.AddonRegistry, topology.AddonFlux})
	if kind.toRun != 1 || len(kind.notRun) != 0 || len(kind.addons) != 0 || !harness.MatchTags(kind.tags, pickles[0].Tags) {
		t.Errorf("on kind with the registry: %d to run, not run %v, add-ons %v, tags %q; want 1, none, none, selecting it", kind.toRun, kind.notRun, kind.addons, kind.tags)
	}
	k0s := planRun(pickles, "", "k0s", "flux", []string{harness.CapabilityDatapath}, nil, []string{topology.AddonFlux})
	if k0s.toRun != 0 || len(k0s.notRun) != 1 || !strings.HasPrefix(k0s.notRun[0].reason, "needs the registry add-on, which this k0s topology does not run") {
		t.Errorf("on k0s without the registry: %d to run, not run %v; want 0 and the reason", k0s.toRun, k0s.notRun)
	}
	if harness.MatchTags(k0s.tags, pickles[0].Tags) {
		t.Errorf("on k0s without the registry the tags %q select the @registry scenario", k0s.tags)
	}
	k0sTop, err := topology.Load("topology-k0s.yaml")
	if err != nil {
		t.Fatal(err)
	}
	k0s = planRun(pickles, "", "k0s", "flux", []string{harness.CapabilityDatapath}, nil, k0sTop.Addons)
	if k0s.toRun != 1 || len(k0s.notRun) != 0 || !harness.MatchTags(k0s.tags, pickles[0].Tags) {
		t.Errorf("on topology-k0s.yaml, which has the registry: %d to run, not run %v, tags %q; want 1, none, selecting it", k0s.toRun, k0s.notRun, k0s.tags)
	}
}

// A @partition scenario cuts the network between clusters, which only a provider with the
// partition capability can do (kind): elsewhere it is not run, and says why, rather than
// selected and failed (first k0s run of the suite, 2026-12-07: "fault network is not supported
// on provider k0s").
func TestPlanRun_PartitionNeedsTheCapability(t *testing.T) {
	pickles := []harness.Pickle{
		{Name: "d", Tags: []string{"@datapath"}},
		{Name: "p", Tags: []string{"@datapath", "@slow", "@partition"}},
	}
	k0s := planRun(pickles, "", "k0s", "flux", []string{harness.CapabilityDatapath}, nil, nil)
	if k0s.toRun != 1 || len(k0s.notRun) != 1 || k0s.notRun[0].name != "p" {
		t.Fatalf("on k0s: %d to run, not run %v; want 1, and p not run", k0s.toRun, k0s.notRun)
	}
	if want := "needs the partition capability (cutting the network between clusters), which provider k0s lacks: run it on kind"; k0s.notRun[0].reason != want {
		t.Errorf("on k0s: reason %q, want %q", k0s.notRun[0].reason, want)
	}
	for _, pk := range pickles {
		if harness.MatchTags(k0s.tags, pk.Tags) != (pk.Name == "d") {
			t.Errorf("on k0s the expression %q selects %s: %v", k0s.tags, pk.Name, harness.MatchTags(k0s.tags, pk.Tags))
		}
	}
	kind := planRun(pickles, "", "kind", "flux", []string{harness.CapabilityDatapath, harness.CapabilityPartition}, nil, []string{topology.AddonRegistry})
	if kind.toRun != 2 || len(kind.notRun) != 0 {
		t.Errorf("on kind: %d to run, not run %v; want 2 and none", kind.toRun, kind.notRun)
	}
}
