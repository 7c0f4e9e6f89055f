// Package wait is the one way the test bed waits: poll a condition at an interval until it
// holds or a timeout passes, both taken from the topology's waits, and say what was waited
// for and why it never held.
package wait

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	kwait "k8s.io/apimachinery/pkg/util/wait"

	"github.com/polykube/polykube/testbed/topology"
)

// Condition returns nil when the condition holds, an error saying why it does not hold yet,
// or a Stop error to give up at once.
type Condition func(ctx context.Context) error

type stopError struct{ err error }

func (e stopError) Error() string { return e.err.Error() }
func (e stopError) Unwrap() error { return e.err }

// Stop marks err as final: For returns it without polling again.
func Stop(err error) error { return stopError{err} }

// TimeoutError is returned when a condition did not hold in time.
type TimeoutError struct {
	What    string
	Timeout time.Duration
	// Last is why the condition did not hold at the last poll.
	Last error
}

func (e *TimeoutError) Error() string {
	if e.Last == nil {
		return fmt.Sprintf("timed out after %s waiting for %s", e.Timeout, e.What)
	}
	return fmt.Sprintf("timed out after %s waiting for %s: %v", e.Timeout, e.What, e.Last)
}

func (e *TimeoutError) Unwrap() error { return e.Last }

// For polls cond every w.Interval (immediately first) until it returns nil, returns a Stop
// error, or w.Timeout passes. what names the condition in the error.
func For(ctx context.Context, w topology.Wait, what string, cond Condition) error {
	interval := w.Interval.Duration
	if interval <= 0 {
		interval = 500 * time.Millisecond
	}
	var last error
	err := kwait.PollUntilContextTimeout(ctx, interval, w.Timeout.Duration, true, func(ctx context.Context) (bool, error) {
		err := cond(ctx)
		var stop stopError
		if errors.As(err, &stop) {
			return false, stop.err
		}
		last = err
		return err == nil, nil
	})
	switch {
	case err == nil:
		return nil
	case ctx.Err() != nil:
		return fmt.Errorf("waiting for %s: %w", what, context.Cause(ctx))
	case kwait.Interrupted(err):
		return &TimeoutError{What: what, Timeout: w.Timeout.Duration, Last: last}
	default:
		return fmt.Errorf("waiting for %s: %w", what, err)
	}
}

// HTTPOK is a condition: url answers 200 within two seconds.
func HTTPOK(url string) Condition {
	hc := &http.Client{Timeout: 2 * time.Second}
	return func(ctx context.Context) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return Stop(err)
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("%s answers %s", url, resp.Status)
		}
		return nil
	}
}
