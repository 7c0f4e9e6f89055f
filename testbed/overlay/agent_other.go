//go:build !linux

package overlay

import (
	"context"
	"fmt"
	"runtime"
)

// Agent is one node's WireGuard interface; it runs on Linux nodes only.
type Agent struct{}

// Start reports that the agent needs Linux: the overlay runs on cluster nodes, not on the
// workstation that drives the test bed.
func Start(context.Context, Config) (*Agent, error) {
	return nil, fmt.Errorf("the overlay agent runs on Linux nodes only, not on %s", runtime.GOOS)
}

// SetPeers is never reached off Linux.
func (*Agent) SetPeers(context.Context, []Peer) error { return nil }

// Status is empty off Linux.
func (*Agent) Status() Status { return Status{} }

// Close does nothing off Linux.
func (*Agent) Close() error { return nil }
