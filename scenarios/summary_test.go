package scenarios

import (
	"strings"
	"testing"
	"time"

	"github.com/cucumber/godog"
)

func TestSummary_SaysWhereTheTimeWent(t *testing.T) {
	r := &results{bringUp: 41 * time.Second}
	for i, sc := range []struct {
		id, uri string
		took    time.Duration
	}{{"a", "features/fast.feature", time.Second}, {"b", "features/slow.feature", 0}, {"c", "features/slow.feature", 0}} {
		p := &godog.Scenario{Id: sc.id, Uri: sc.uri, Name: sc.id}
		r.begin(p)
		r.started[p.Id] = r.started[p.Id].Add(-sc.took - time.Duration(i)*time.Minute)
		r.add(p, nil)
	}
	out := r.summary("kwok", nil, 5*time.Minute)
	for _, want := range []string{"3 passed, 0 failed, 0 not run", "where the time went (wall 5m0s)", "bring-up of the federation", "41s", "slow.feature", "2 scenario(s)", "3m0s"} {
		if !strings.Contains(out, want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	_, table, _ := strings.Cut(out, "where the time went")
	if strings.Index(table, "slow.feature") > strings.Index(table, "fast.feature") {
		t.Errorf("the slowest feature comes first:\n%s", out)
	}
}
