// Package pipeline runs a bring-up as a list of small actions, each announced on a status
// line and left out when the configuration does not ask for it, as kind's create pipeline
// runs its actions. Both test beds (the host bed and the in-cluster bed) bring a
// federation up through it, so their status lines, timings and errors read the same.
package pipeline

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Action is one step of a bring-up.
type Action struct {
	// What is the status line, a sentence starting with a verb ("Installing Flux").
	What string
	// Run does it.
	Run func() error
	// Skip leaves it out (for example an add-on the topology does not list).
	Skip bool
}

// Phase is how long an action took.
type Phase struct {
	What string
	Took time.Duration
}

// Steps announces actions on Out and records how long each took.
type Steps struct {
	Out io.Writer
	// Untimed leaves the durations out of the status lines (a dry run, whose output is a
	// plan that tests compare with golden files).
	Untimed bool
	// Phases are the actions run so far, in order.
	Phases []Phase
}

// Step runs fn between a "•" line and a "✓" (or "✗") line, and returns its error prefixed
// with what, so that the error says which step failed.
func (s *Steps) Step(what string, fn func() error) error {
	fmt.Fprintf(s.Out, " • %s\n", what)
	start := time.Now()
	err := fn()
	took := time.Since(start)
	s.Phases = append(s.Phases, Phase{What: what, Took: took})
	mark := "✓"
	if err != nil {
		mark = "✗"
	}
	if s.Untimed {
		fmt.Fprintf(s.Out, " %s %s\n", mark, what)
	} else {
		fmt.Fprintf(s.Out, " %s %s (%s)\n", mark, what, round(took))
	}
	if err != nil {
		return fmt.Errorf("%s: %w", strings.ToLower(what[:1])+what[1:], err)
	}
	return nil
}

// Run runs the actions that are not skipped, in order, and stops at the first that fails.
func (s *Steps) Run(actions []Action) error {
	for _, a := range actions {
		if a.Skip {
			continue
		}
		if err := s.Step(a.What, a.Run); err != nil {
			return err
		}
	}
	return nil
}

// round keeps a tenth of a second for short steps and whole seconds for long ones.
func round(d time.Duration) time.Duration {
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond)
	}
	return d.Round(time.Second)
}
