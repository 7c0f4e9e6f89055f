package datapath

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// CallRecord is one line the echo client prints per call: the cluster that answered, or the error.
type CallRecord struct {
	N       int    `json:"call"`
	Cluster string `json:"cluster,omitempty"`
	Pod     string `json:"pod,omitempty"`
	// Bytes and Seconds are given for a call that asked for a payload: the bytes that arrived
	// whole (checked byte by byte), and the time from the request to the last of them.
	Bytes   int64   `json:"bytes,omitempty"`
	Seconds float64 `json:"seconds,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// ParseCalls reads the echo client's output (one JSON Call per line) and returns the answers
// in call order: the answering cluster, or "" for a call that failed. It fails unless there
// is exactly one line per call 0..want-1.
func ParseCalls(out string, want int) ([]string, error) {
	recs, err := ParseCallRecords(out, want)
	if err != nil {
		return nil, err
	}
	answers := make([]string, want)
	for i, r := range recs {
		answers[i] = r.Cluster
	}
	return answers, nil
}

// ParseCallRecords reads the echo client's output as ParseCalls does and returns every call's
// record in call order.
func ParseCallRecords(out string, want int) ([]CallRecord, error) {
	recs := make([]CallRecord, want)
	seen := make([]bool, want)
	for i, line := range strings.Split(strings.TrimSpace(out), "\n") {
		if strings.TrimSpace(line) == "" {
			continue
		}
		var c CallRecord
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			return nil, fmt.Errorf("line %d of the echo client's output is not a call record: %q", i+1, line)
		}
		if c.N < 0 || c.N >= want || seen[c.N] {
			return nil, fmt.Errorf("line %d: call %d is out of range or repeated (want calls 0-%d once each)", i+1, c.N, want-1)
		}
		if c.Error == "" && c.Cluster == "" {
			return nil, fmt.Errorf("line %d: call %d has neither a cluster nor an error", i+1, c.N)
		}
		seen[c.N] = true
		recs[c.N] = c
	}
	if missing := slices.Index(seen, false); missing >= 0 {
		return nil, fmt.Errorf("the echo client reported no result for call %d of %d", missing, want)
	}
	return recs, nil
}

// Tally counts the answers per cluster.
type Tally struct {
	// Rows has one row per cluster of the federation in topology order (also those that
	// answered nothing), then any other answering names in sorted order.
	Rows []TallyRow
	// Unanswered counts calls that failed.
	Unanswered int
	Total      int
}

// TallyRow is one cluster's count.
type TallyRow struct {
	Cluster string
	Answers int
}

// Count tallies answers ("" for a failed call) against the federation's clusters.
func Count(answers []string, clusters []string) Tally {
	counts := map[string]int{}
	t := Tally{Total: len(answers)}
	for _, a := range answers {
		if a == "" {
			t.Unanswered++
			continue
		}
		counts[a]++
	}
	for _, c := range clusters {
		t.Rows = append(t.Rows, TallyRow{Cluster: c, Answers: counts[c]})
		delete(counts, c)
	}
	var others []string
	for c := range counts {
		others = append(others, c)
	}
	slices.Sort(others)
	for _, c := range others {
		t.Rows = append(t.Rows, TallyRow{Cluster: c, Answers: counts[c]})
	}
	return t
}

// Of returns the count of one cluster.
func (t Tally) Of(cluster string) int {
	for _, r := range t.Rows {
		if r.Cluster == cluster {
			return r.Answers
		}
	}
	return 0
}

// Print writes the tally as a table: cluster → answers and share of all calls.
func (t Tally) Print(w io.Writer) {
	tw := tabwriter.NewWriter(w, 0, 0, 3, ' ', 0)
	fmt.Fprintln(tw, "  CLUSTER\tANSWERS\tSHARE")
	share := func(n int) string {
		if t.Total == 0 {
			return "-"
		}
		return fmt.Sprintf("%d%%", (n*100+t.Total/2)/t.Total)
	}
	for _, r := range t.Rows {
		fmt.Fprintf(tw, "  %s\t%d\t%s\n", r.Cluster, r.Answers, share(r.Answers))
	}
	fmt.Fprintf(tw, "  (no answer)\t%d\t%s\n", t.Unanswered, share(t.Unanswered))
	fmt.Fprintf(tw, "  total\t%d\t\n", t.Total)
	tw.Flush()
}

// Summary is the tally on one line: each cluster's answers, then the calls with no answer.
func (t Tally) Summary() string {
	parts := make([]string, 0, len(t.Rows)+1)
	for _, r := range t.Rows {
		parts = append(parts, fmt.Sprintf("%s %d", r.Cluster, r.Answers))
	}
	return strings.Join(append(parts, fmt.Sprintf("no answer %d", t.Unanswered)), ", ")
}
