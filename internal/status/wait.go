package status

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/polykube/polykube/internal/status/render"
)

// DefaultWait is how long --wait waits when it is given without a value.
const DefaultWait = 5 * time.Minute

// WaitInterval is the pause between two reads of the fleet while --wait waits. Each read is a
// list per kind per cluster, so a second keeps a waiting run cheap for the API servers.
const WaitInterval = time.Second

// WaitOptions say how long Wait waits and where it tells what it waits for.
type WaitOptions struct {
	// Timeout is how long to keep reading; no read starts after it has passed.
	Timeout time.Duration
	// Interval is the pause between reads; 0 means WaitInterval.
	Interval time.Duration
	// Progress, when set, is told what the fleet still lacks whenever that changes.
	Progress io.Writer
}

// Wait reads the fleet with read until its report is healthy (every cluster read, agreeing and
// ready: exit code 0) or opts.Timeout has passed, and returns the last report. It returns early
// with ctx's error when ctx ends. A run takes at most about opts.Timeout plus one read.
func Wait(ctx context.Context, read func(context.Context) Report, opts WaitOptions) (Report, error) {
	if opts.Interval <= 0 {
		opts.Interval = WaitInterval
	}
	start := time.Now()
	deadline := start.Add(opts.Timeout)
	last := ""
	for {
		r := read(ctx)
		if err := ctx.Err(); err != nil {
			return r, err
		}
		if r.Summary.ExitCode == ExitOK {
			return r, nil
		}
		if why := waitingFor(r); why != last && opts.Progress != nil {
			last = why
			fmt.Fprintf(opts.Progress, "polykube-status: waiting (%s of %s): %s\n",
				time.Since(start).Round(time.Second), opts.Timeout, why)
		}
		if !time.Now().Add(opts.Interval).Before(deadline) {
			return r, nil
		}
		pause := time.NewTimer(opts.Interval)
		select {
		case <-ctx.Done():
			pause.Stop()
			return r, ctx.Err()
		case <-pause.C:
		}
	}
}

// waitingFor says in one line what keeps r from exit code 0.
func waitingFor(r Report) string {
	s := r.Summary
	var parts []string
	if len(s.Unreachable) > 0 {
		parts = append(parts, "not read completely: "+strings.Join(s.Unreachable, ", "))
	}
	if len(s.Failing) > 0 {
		parts = append(parts, "failing: "+strings.Join(s.Failing, "; "))
	}
	if len(r.Disagreements) > 0 {
		var kinds []string
		for _, d := range r.Disagreements {
			kinds = append(kinds, d.Kind+" "+d.Object)
		}
		parts = append(parts, "disagreements: "+strings.Join(uniqueSorted(kinds), "; "))
	}
	if len(s.NotReady) > 0 {
		parts = append(parts, "not ready: "+strings.Join(s.NotReady, "; "))
	}
	return render.Escape(strings.Join(parts, "; "))
}
