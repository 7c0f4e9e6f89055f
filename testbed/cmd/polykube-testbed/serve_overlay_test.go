package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// The overlay agent refuses a configuration it cannot bring up before touching the host, and
// says what to give instead.
func TestServeOverlayAgent_SaysWhatIsWrong(t *testing.T) {
	for _, tc := range []struct {
		args []string
		err  string
	}{
		{[]string{"--address", "100.96.0.1"}, "want the node's overlay address with the overlay's prefix length"},
		{[]string{"--address", "100.96.0.1/16", "--underlay-mtu", "600"}, "raise the underlay MTU"},
		{[]string{"--address", "100.96.0.1/16", "--interface", "a-name-longer-than-15"}, "want 1 to 15 characters"},
		{[]string{"--address", "100.96.0.1/16", "--port", "0"}, "want 1-65535"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			cmd := newServeOverlayAgentCmd()
			var out bytes.Buffer
			cmd.SetOut(&out)
			cmd.SetErr(&out)
			cmd.SetArgs(append([]string{"--node-state-dir", t.TempDir(), "--peers", t.TempDir() + "/peers.json"}, tc.args...))
			err := cmd.ExecuteContext(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("error %v, want one saying %q\n%s", err, tc.err, out.String())
			}
		})
	}
}
