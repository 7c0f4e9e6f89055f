package main

import (
	"context"
	"fmt"

	"github.com/polykube/polykube/internal/status"
)

// clearScreen moves the cursor home and clears the terminal, so a redrawn table replaces the
// last one instead of scrolling.
const clearScreen = "\x1b[H\x1b[2J"

// watchFleet draws the report whenever it changes, until ctx ends (Ctrl-C), and leaves the last
// report's exit code.
func (c *cli) watchFleet(ctx context.Context, targets []status.Target, q status.Query, read func(context.Context) status.Report, view string) error {
	first := true
	draw := func(r status.Report) error {
		switch {
		case c.output == status.FormatTable && c.terminal:
			fmt.Fprint(c.stdout, clearScreen)
		case c.output == status.FormatYAML:
			fmt.Fprintln(c.stdout, "---")
		case !first:
			fmt.Fprintln(c.stdout)
		}
		first = false
		return status.PrintReport(c.stdout, r, c.output, view, status.PrintOptions{Color: c.color})
	}
	last, err := status.Watch(ctx, targets, q, read, status.WatchOptions{Draw: draw, Progress: c.stderr})
	if err != nil {
		return err
	}
	c.exitCode = last.Summary.ExitCode
	return nil
}
