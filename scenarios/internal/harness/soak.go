package harness

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/soak"
)

// Bed is the test-bed bed under the federation, for what drives a bed as a whole (the soak).
func (f *bedFederation) Bed() testbed.Bed { return f.bed }

// Soak walks the federation through the seeded random faults and edits of testbed/soak for
// the duration; CheckSoakClean then asserts it found nothing. The soak's Workloads and roster
// labels are taken out of Git when the scenario ends.
func (sc *Scenario) Soak(ctx context.Context, d time.Duration, seed uint64) error {
	holder, ok := sc.Fed.(interface{ Bed() testbed.Bed })
	if !ok {
		return errors.New("this federation is not a test-bed bed: the soak drives a bed's faults and Git itself")
	}
	bed := holder.Bed()
	sc.OnTeardown("remove the soak's Workloads from Git", func(ctx context.Context) error { return soak.Cleanup(ctx, bed) })
	report, err := soak.Run(ctx, bed, soak.Options{Duration: d, Seed: seed, Log: os.Stderr})
	if report != nil {
		fmt.Fprint(os.Stdout, report.Summary())
	}
	sc.soakReport = report
	return err
}

// CheckSoakClean fails with every violation the last soak found.
func (sc *Scenario) CheckSoakClean() error {
	if sc.soakReport == nil {
		return errors.New("no soak ran in this scenario")
	}
	if len(sc.soakReport.Violations) == 0 {
		return nil
	}
	var lines []string
	for _, v := range sc.soakReport.Violations {
		lines = append(lines, v.String())
	}
	return fmt.Errorf("the soak (seed %d, %d steps) found %d violations:\n%s", sc.soakReport.Seed, sc.soakReport.Steps,
		len(lines), strings.Join(lines, "\n"))
}
