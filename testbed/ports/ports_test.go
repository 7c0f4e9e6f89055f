package ports

import (
	"fmt"
	"net"
	"testing"
)

// Lasting skips a port something listens on and stays below the ephemeral range.
func TestLasting_SkipsATakenPortAndStaysBelowTheEphemeralRange(t *testing.T) {
	const base = 27100
	var held net.Listener
	for p := base; p < base+50; p++ {
		if l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", p)); err == nil {
			held = l
			break
		}
	}
	if held == nil {
		t.Skip("no free port near 27100 to hold")
	}
	defer held.Close()
	taken := held.Addr().(*net.TCPAddr).Port
	got, err := Lasting(taken)
	if err != nil {
		t.Fatal(err)
	}
	if got == taken {
		t.Fatalf("Lasting(%d) returned the port held by a listener", taken)
	}
	if got < taken || got >= ephemeralLow() {
		t.Fatalf("Lasting(%d) = %d, want a port from %d up, below %d", taken, got, taken, ephemeralLow())
	}
	l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", got))
	if err != nil {
		t.Fatalf("the port Lasting returned is not free: %v", err)
	}
	l.Close()
}
