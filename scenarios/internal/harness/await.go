package harness

import (
	"context"
	"fmt"
	"time"

	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/polykube/polykube/testbed/topology"
)

// Check returns nil when what a step awaits holds, or an error describing what it saw instead
// (the "last seen" of a timeout).
type Check func(ctx context.Context) error

// checkTimeout bounds one call of a Check. Each call gets the step's context with this
// timeout rather than the wait's deadline, so the last call before a timeout runs whole and
// its error says what was last seen (not "context deadline exceeded").
const checkTimeout = 30 * time.Second

// Await polls check every w.Interval, first at once, until it returns nil or w.Timeout passes.
// The error names what was awaited, for how long, and what was last seen.
func Await(ctx context.Context, w topology.Wait, what string, check Check) error {
	var last error
	err := kwait.PollUntilContextTimeout(ctx, w.Interval.Duration, w.Timeout.Duration, true, func(context.Context) (bool, error) {
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		defer cancel()
		last = check(cctx)
		return last == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("gave up waiting for %s: the scenario ran out of time or was stopped (%v); last seen: %v", what, context.Cause(ctx), last)
	default:
		return fmt.Errorf("timed out after %s waiting for %s; last seen: %v", w.Timeout.Duration, what, last)
	}
}

// Hold checks that check keeps holding for the whole of w.Timeout, polling every w.Interval.
// It fails at the first poll where it does not, saying what broke.
func Hold(ctx context.Context, w topology.Wait, what string, check Check) error {
	err := kwait.PollUntilContextTimeout(ctx, w.Interval.Duration, w.Timeout.Duration, true, func(context.Context) (bool, error) {
		// As in Await: the check gets the step's context, not the window's deadline, which
		// would fail a check started just before the window ends and call that a break.
		cctx, cancel := context.WithTimeout(ctx, checkTimeout)
		defer cancel()
		if err := check(cctx); err != nil {
			return false, fmt.Errorf("%s stopped holding: %w", what, err)
		}
		return false, nil
	})
	if kwait.Interrupted(err) && ctx.Err() == nil {
		return nil // held for the whole window
	}
	if err == nil {
		return nil
	}
	return err
}
