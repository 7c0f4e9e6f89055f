package pipeline

import (
	"bytes"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
)

func TestRun_AnnouncesRunsInOrderSkipsAndStopsAtTheFirstFailure(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	var ran []string
	act := func(name string, err error) func() error {
		return func() error { ran = append(ran, name); return err }
	}
	s := &Steps{Out: &out, Untimed: true}
	err := s.Run([]Action{
		{What: "Creating 3 clusters", Run: act("clusters", nil)},
		{What: "Starting the Git server", Run: act("git", nil), Skip: true},
		{What: "Installing Flux", Run: act("flux", errors.New("no CRDs"))},
		{What: "Starting operators", Run: act("operators", nil)},
	})
	g.Expect(err).To(MatchError("installing Flux: no CRDs"))
	g.Expect(ran).To(Equal([]string{"clusters", "flux"}))
	g.Expect(out.String()).To(Equal(" • Creating 3 clusters\n ✓ Creating 3 clusters\n • Installing Flux\n ✗ Installing Flux\n"))
	g.Expect(s.Phases).To(HaveLen(2))
	g.Expect(s.Phases[1].What).To(Equal("Installing Flux"))
}

func TestStep_TimedLinesSayHowLongItTook(t *testing.T) {
	g := NewWithT(t)
	var out bytes.Buffer
	s := &Steps{Out: &out}
	g.Expect(s.Step("Checking the host", func() error { return nil })).To(Succeed())
	g.Expect(out.String()).To(MatchRegexp(`^ • Checking the host\n ✓ Checking the host \(0s\)\n$`))
}
