package scenarios

import (
	"maps"
	"strings"
	"testing"
)

// A cell of the failover status table parses to replicas per peer, "-" to none, and a bad
// cell is refused naming its column.
func TestSharesCell(t *testing.T) {
	got, err := sharesCell("pending", "alpha: 6, beta: 0")
	if err != nil || !maps.Equal(got, map[string]int32{"alpha": 6, "beta": 0}) {
		t.Fatalf("sharesCell = %v, %v", got, err)
	}
	if got, err := sharesCell("absorbs", "-"); err != nil || len(got) != 0 {
		t.Fatalf("sharesCell(-) = %v, %v", got, err)
	}
	if _, err := sharesCell("pending", "alpha 6"); err == nil || !strings.Contains(err.Error(), `pending "alpha 6"`) {
		t.Fatalf("a bad cell: err = %v, want one naming the pending column", err)
	}
}
