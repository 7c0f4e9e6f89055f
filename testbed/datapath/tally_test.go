package datapath

import (
	"bytes"
	"testing"

	. "github.com/onsi/gomega"
)

var clusters = []string{"aws-eu-central-1", "gcp-europe-west3", "onprem-fra"}

func TestCount(t *testing.T) {
	tests := []struct {
		name       string
		answers    []string
		rows       []TallyRow
		unanswered int
	}{
		{
			name:    "no calls: every cluster listed with zero",
			answers: nil,
			rows:    []TallyRow{{"aws-eu-central-1", 0}, {"gcp-europe-west3", 0}, {"onprem-fra", 0}},
		},
		{
			name:    "answers from every cluster, in topology order whatever the call order",
			answers: []string{"onprem-fra", "aws-eu-central-1", "onprem-fra", "gcp-europe-west3", "aws-eu-central-1", "onprem-fra"},
			rows:    []TallyRow{{"aws-eu-central-1", 2}, {"gcp-europe-west3", 1}, {"onprem-fra", 3}},
		},
		{
			name:       "failed calls are counted apart",
			answers:    []string{"", "aws-eu-central-1", "", ""},
			rows:       []TallyRow{{"aws-eu-central-1", 1}, {"gcp-europe-west3", 0}, {"onprem-fra", 0}},
			unanswered: 3,
		},
		{
			name:    "a name outside the federation is still shown, after the members, sorted",
			answers: []string{"zeta", "stray", "gcp-europe-west3", "stray"},
			rows:    []TallyRow{{"aws-eu-central-1", 0}, {"gcp-europe-west3", 1}, {"onprem-fra", 0}, {"stray", 2}, {"zeta", 1}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			got := Count(tt.answers, clusters)
			g.Expect(got.Rows).To(Equal(tt.rows))
			g.Expect(got.Unanswered).To(Equal(tt.unanswered))
			g.Expect(got.Total).To(Equal(len(tt.answers)))
			sum := got.Unanswered
			for _, r := range got.Rows {
				sum += r.Answers
			}
			g.Expect(sum).To(Equal(got.Total), "every call is counted exactly once")
		})
	}
}

func TestTally_Print(t *testing.T) {
	g := NewWithT(t)
	answers := []string{}
	for i := 0; i < 60; i++ {
		switch {
		case i < 21:
			answers = append(answers, "aws-eu-central-1")
		case i < 40:
			answers = append(answers, "gcp-europe-west3")
		case i < 58:
			answers = append(answers, "onprem-fra")
		default:
			answers = append(answers, "")
		}
	}
	var out bytes.Buffer
	tl := Count(answers, clusters)
	tl.Print(&out)
	g.Expect(out.String()).To(Equal(`  CLUSTER            ANSWERS   SHARE
  aws-eu-central-1   21        35%
  gcp-europe-west3   19        32%
  onprem-fra         18        30%
  (no answer)        2         3%
  total              60        
`))
	g.Expect(tl.Of("gcp-europe-west3")).To(Equal(19))
	g.Expect(tl.Of("nowhere")).To(Equal(0))
}

func TestParseCalls(t *testing.T) {
	g := NewWithT(t)
	out := `{"call":1,"cluster":"gcp-europe-west3","pod":"echo-2"}
{"call":0,"cluster":"aws-eu-central-1","pod":"echo-1"}

{"call":2,"error":"Get \"http://echo.polykube-demo.svc.cluster.local/\": context deadline exceeded"}
`
	answers, err := ParseCalls(out, 3)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(answers).To(Equal([]string{"aws-eu-central-1", "gcp-europe-west3", ""}))

	for name, tc := range map[string]struct {
		out  string
		want int
		err  string
	}{
		"garbage":          {`error: pod not found`, 1, "not a call record"},
		"missing call":     {`{"call":0,"cluster":"a"}`, 2, "no result for call 1 of 2"},
		"repeated call":    {"{\"call\":0,\"cluster\":\"a\"}\n{\"call\":0,\"cluster\":\"b\"}", 2, "out of range or repeated"},
		"out of range":     {`{"call":5,"cluster":"a"}`, 2, "out of range"},
		"empty record":     {`{"call":0}`, 1, "neither a cluster nor an error"},
		"no output at all": {``, 1, "no result for call 0 of 1"},
	} {
		_, err := ParseCalls(tc.out, tc.want)
		g.Expect(err).To(MatchError(ContainSubstring(tc.err)), name)
	}
}

func TestTallySummary(t *testing.T) {
	g := NewWithT(t)
	tally := Count([]string{"aws-eu-central-1", "", "gcp-europe-west3", "aws-eu-central-1"}, clusters)
	g.Expect(tally.Summary()).To(Equal("aws-eu-central-1 2, gcp-europe-west3 1, onprem-fra 0, no answer 1"))
}
