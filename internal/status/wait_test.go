package status

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// rollingOut is the healthy fleet with beta's web slice still starting.
func rollingOut() Report {
	s := healthyFleet()
	w := findWorkload(&s[1], "web")
	w.Status.ReadyReplicas, w.Status.Phase = 0, polykubev1alpha1.PhaseProgressing
	return Merge(s, Query{Namespace: "shop"})
}

func TestWait_UntilHealthy(t *testing.T) {
	g := NewWithT(t)
	reports := []Report{rollingOut(), rollingOut(), Merge(healthyFleet(), Query{Namespace: "shop"})}
	reads := 0
	var progress bytes.Buffer
	r, err := Wait(context.Background(), func(context.Context) Report {
		reads++
		return reports[reads-1]
	}, WaitOptions{Timeout: time.Minute, Interval: time.Millisecond, Progress: &progress})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(reads).To(Equal(3))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitOK))
	// Said once: it did not change between the first two reads.
	g.Expect(strings.Count(progress.String(), "\n")).To(Equal(1), progress.String())
	g.Expect(progress.String()).To(MatchRegexp(`^polykube-status: waiting \(0s of 1m0s\): not ready: Workload shop/web\n$`))
}

func TestWait_GivesUpAfterTheTimeout(t *testing.T) {
	g := NewWithT(t)
	reads := 0
	start := time.Now()
	r, err := Wait(context.Background(), func(context.Context) Report { reads++; return rollingOut() },
		WaitOptions{Timeout: 50 * time.Millisecond, Interval: 10 * time.Millisecond})
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(r.Summary.ExitCode).To(Equal(ExitNotReady), "the last report, with its own exit code")
	g.Expect(reads).To(BeNumerically(">=", 2))
	g.Expect(time.Since(start)).To(BeNumerically("<", time.Second))
}

func TestWait_Interrupted(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	_, err := Wait(ctx, func(context.Context) Report { cancel(); return rollingOut() }, WaitOptions{Timeout: time.Hour})
	g.Expect(err).To(MatchError(context.Canceled))
}
