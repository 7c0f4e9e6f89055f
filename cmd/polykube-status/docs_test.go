package main

import (
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"strings"
	"testing"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/plan"
)

// TestDocs_DescribeTheSchema keeps docs/status-cli.md in step with the code: every JSON field,
// disagreement kind, cluster reason and exit code must be documented.
func TestDocs_DescribeTheSchema(t *testing.T) {
	g := NewWithT(t)
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "status-cli.md"))
	g.Expect(err).NotTo(HaveOccurred())
	doc := string(raw)

	for _, root := range []any{status.Report{}, plan.PlanReport{}, plan.PlanDiff{}} {
		for _, field := range jsonFields(reflect.TypeOf(root), map[reflect.Type]bool{}) {
			g.Expect(regexp.MustCompile("[`.]"+regexp.QuoteMeta(field)+"[`\\[ ,]").MatchString(doc)).To(BeTrue(),
				"docs/status-cli.md does not document the JSON field %q of %T", field, root)
		}
	}
	for _, word := range []string{
		status.DisagreeSpec, status.DisagreeSpecHash, status.DisagreeAllocation, status.DisagreeExpected, status.DisagreeInvalidSpec, status.DisagreeMissingCopy,
		status.DisagreeUnreported, status.DisagreeUntargeted, status.DisagreeRoster, status.DisagreeMember, status.DisagreeDuplicateCluster,
		status.DisagreeTemplate, status.DisagreeFailover, status.NoticeFailoverActive, status.NoticeFailoverSurge, status.NoticeDeficitUnconfirmed, status.LevelWarning,
		status.ReasonUnreachable, status.ReasonTimeout, status.ReasonUnauthorized, status.ReasonForbidden, status.ReasonCRDsMissing, status.ReasonConfigError, status.ReasonError,
		status.NameFromFederation, status.NameFromWorkload, status.StatePresent, status.StateAbsent, status.StateUnknown, status.APIVersion, status.KindFleetStatus, status.KindPlan, status.KindPlanDiff,
	} {
		g.Expect(doc).To(ContainSubstring("`"+word+"`"), "docs/status-cli.md does not mention %s", word)
	}
	for code := status.ExitOK; code <= status.ExitFailing; code++ {
		g.Expect(doc).To(MatchRegexp(`\n\| %d \| \S`, code), "docs/status-cli.md does not document exit code %d", code)
	}
}

// jsonFields lists the JSON names of every field reachable from t.
func jsonFields(t reflect.Type, seen map[reflect.Type]bool) []string {
	for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct || seen[t] || !strings.HasPrefix(t.PkgPath(), reflect.TypeOf(status.Report{}).PkgPath()) {
		return nil
	}
	seen[t] = true
	var out []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" || name == "-" {
			continue
		}
		out = append(out, name)
		out = append(out, jsonFields(f.Type, seen)...)
	}
	return out
}
