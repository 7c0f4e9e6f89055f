package scenarios

import (
	"slices"
	"testing"

	"github.com/polykube/polykube/scenarios/internal/harness"
)

func TestPlanRun(t *testing.T) {
	pickles := []harness.Pickle{
		{Name: "h", Tags: []string{"@hermetic"}},
		{Name: "s", Tags: []string{"@hermetic", "@slow"}},
		{Name: "w", Tags: []string{"@hermetic", "@wip"}, WIPReason: "testbed"},
		{Name: "d", Tags: []string{"@datapath"}},
		{Name: "m", Tags: []string{"@hermetic", "@slow", "@mesh-mirror"}},
		{Name: "k", Tags: []string{"@hermetic", "@soak"}},
	}
	tests := []struct {
		tags, provider string
		caps           []string
		wantTags       string
		wantRun        int
		wantNotRun     []string
		wantAddons     []string
	}{
		{"", "kwok", nil, "~@datapath && ~@wip && ~@soak", 3, []string{"@wip (testbed)", "needs datapath (provider kwok)", "@soak (as long as it is told to run: make soak, or --godog.tags=@soak)"}, []string{"mesh-mirror"}},
		{"~@slow", "kwok", nil, "~@slow && ~@datapath && ~@wip && ~@soak", 1, []string{"@wip (testbed)", "needs datapath (provider kwok)", "@soak (as long as it is told to run: make soak, or --godog.tags=@soak)"}, nil},
		{"@wip", "kwok", nil, "@wip && ~@datapath && ~@soak", 1, nil, nil},
		{"@datapath", "kind", []string{harness.CapabilityDatapath}, "@datapath && ~@wip && ~@soak", 1, nil, nil},
		// On kind Cilium mirrors: the @mesh-mirror scenario runs, with no add-on.
		{"@hermetic", "kind", []string{harness.CapabilityDatapath}, "@hermetic && ~@wip && ~@soak", 3, []string{"@wip (testbed)", "@soak (as long as it is told to run: make soak, or --godog.tags=@soak)"}, nil},
		{"@none", "kwok", nil, "@none && ~@datapath && ~@wip && ~@soak", 0, nil, nil},
		// Asked for, the soak runs (and only it).
		{"@soak", "kwok", nil, "@soak && ~@datapath && ~@wip", 1, nil, nil},
	}
	for _, tt := range tests {
		p := planRun(pickles, tt.tags, tt.provider, tt.caps)
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
