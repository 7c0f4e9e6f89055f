package status

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

var update = flag.Bool("update", false, "rewrite testdata/*.golden from the current output")

// golden compares got with testdata/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatalf("update %s: %v", path, err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v (run `go test ./internal/status/ -run %s -update` to create it)", path, err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; if the change is intended, run with -update.\n--- want\n%s\n--- got\n%s", path, want, got)
	}
}

// troubledFleet: gamma is unreachable, beta's roster lacks gamma, beta's web slice is rolling out.
func troubledFleet() Report {
	s := healthyFleet()
	s[2] = unreachable(s[2], ReasonUnreachable)
	s[1].Federations[0].Spec.Members = []string{"alpha", "beta"}
	c := &s[1].Federations[0].Status.Conditions[1]
	c.Status, c.Reason, c.Message = metav1.ConditionFalse, polykubev1alpha1.ReasonMemberMissing, "gamma has no ClusterMember"
	w := findWorkload(&s[1], "web")
	w.Status.ReadyReplicas, w.Status.Phase = 0, polykubev1alpha1.PhaseProgressing
	return Merge(s, Query{Namespace: "shop"})
}

// overriddenFailoverFleet: gamma is unreachable; alpha and beta absorb its share of checkout (failover)
// and render api with their overrides; beta's api Deployment was edited by hand.
func overriddenFailoverFleet() Report {
	s := mirroredFleet()
	for i, c := range fleetClusters {
		s[i].Workloads = append(s[i].Workloads, sees(failingOver(), c, placement.Deficits{"gamma": 3}))
	}
	s[2] = unreachable(s[2], ReasonUnreachable)
	for i := range s[1].Deployments {
		if d := &s[1].Deployments[i]; d.Name == "api" {
			d.Spec.Template.Spec.Containers[0].Image = "registry.example/api:debug"
		}
	}
	return Merge(s, Query{Namespace: "shop"})
}

// failingFleet: beta's operator fails to reconcile billing-api, gamma's ServiceEndpoint web is in
// Conflict, alpha's binding of web lacks its Secret, and every cluster absorbs the others'
// share of checkout (a fleet-wide failover surge).
func failingFleet() Report {
	s := surgeFleet()
	reconcileFailed(findWorkload(&s[1], "billing-api"), `invalid resource name "shop/ledger-db": [may not contain '/']; the operator retries`)
	s[2].ServiceEndpoints = []polykubev1alpha1.ServiceEndpoint{serviceEndpoint("shop", "web", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict,
		"Service web exists and was not created by this ServiceEndpoint (managed by helm); Polykube never adopts or changes an object it did not create")}
	s[0].DatastoreBindings = []polykubev1alpha1.DatastoreBinding{binding("shop", "web-db", "web", metav1.ConditionFalse, polykubev1alpha1.ReasonSecretNotFound,
		"Secret shop/web-db not found: create it in this cluster")}
	return Merge(s, Query{Namespace: "shop"})
}

func printed(t *testing.T, r Report, format, view string, color bool) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := PrintReport(&b, r, format, view, PrintOptions{Color: color}); err != nil {
		t.Fatalf("print: %v", err)
	}
	return b.Bytes()
}

func TestPrintReport_Golden(t *testing.T) {
	healthy := Merge(healthyFleet(), Query{Namespace: "shop"})
	troubled := troubledFleet()
	overridden := overriddenFailoverFleet()
	failing := failingFleet()
	upgrading := Merge(upgradingFleet(), Query{Namespace: "shop"})
	tests := []struct {
		file   string
		report Report
		format string
		view   string
		color  bool
	}{
		{"fleet-healthy.table.golden", healthy, FormatTable, ViewWorkloads, false},
		{"fleet-healthy.federation.golden", healthy, FormatTable, ViewFederation, false},
		{"fleet-healthy.members.golden", healthy, FormatTable, ViewMembers, false},
		{"fleet-healthy.json.golden", healthy, FormatJSON, "", false},
		{"fleet-troubled.table.golden", troubled, FormatTable, ViewWorkloads, false},
		{"fleet-troubled.color.golden", troubled, FormatTable, ViewWorkloads, true},
		{"fleet-troubled.federation.golden", troubled, FormatTable, ViewFederation, false},
		{"fleet-troubled.json.golden", troubled, FormatJSON, "", false},
		{"fleet-troubled.yaml.golden", troubled, FormatYAML, "", false},
		{"fleet-overrides-failover.table.golden", overridden, FormatTable, ViewWorkloads, false},
		{"fleet-overrides-failover.json.golden", overridden, FormatJSON, "", false},
		{"fleet-failing.table.golden", failing, FormatTable, ViewWorkloads, false},
		{"fleet-failing.json.golden", failing, FormatJSON, "", false},
		{"fleet-upgrading.table.golden", upgrading, FormatTable, ViewWorkloads, false},
		{"fleet-upgrading.json.golden", upgrading, FormatJSON, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			golden(t, tt.file, printed(t, tt.report, tt.format, tt.view, tt.color))
		})
	}
}

func TestPrintReport_JSONAndYAMLAreTheSameDocument(t *testing.T) {
	g := NewWithT(t)
	r := troubledFleet()
	var fromJSON, fromYAML Report
	g.Expect(json.Unmarshal(printed(t, r, FormatJSON, "", false), &fromJSON)).To(Succeed())
	g.Expect(yaml.Unmarshal(printed(t, r, FormatYAML, "", false), &fromYAML)).To(Succeed())
	g.Expect(fromJSON).To(Equal(r))
	g.Expect(fromYAML).To(Equal(r))
	g.Expect(fromJSON.APIVersion).To(Equal("polykube.kismet.io/status/v1alpha1"))
}

func TestPrintReport_NoColourUnlessAsked(t *testing.T) {
	g := NewWithT(t)
	r := troubledFleet()
	g.Expect(string(printed(t, r, FormatTable, ViewWorkloads, false))).NotTo(ContainSubstring("\x1b["))
	g.Expect(string(printed(t, r, FormatTable, ViewWorkloads, true))).To(ContainSubstring("\x1b[31m"))
}

func TestPrintReport_Usage(t *testing.T) {
	g := NewWithT(t)
	err := PrintReport(&bytes.Buffer{}, troubledFleet(), "xml", "", PrintOptions{})
	g.Expect(IsUsage(err)).To(BeTrue())
	g.Expect(err.Error()).To(ContainSubstring("-o json"))
	g.Expect(IsUsage(PrintReport(&bytes.Buffer{}, troubledFleet(), FormatTable, "nodes", PrintOptions{}))).To(BeTrue())
}
