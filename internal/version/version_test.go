package version

import (
	"strings"
	"testing"
)

func TestGet_ReportsTheStampedVersion(t *testing.T) {
	oldV, oldC := Version, Commit
	t.Cleanup(func() { Version, Commit = oldV, oldC })
	Version, Commit = "v1.2.3", "abc123"

	got := Get()
	if got.Version != "v1.2.3" || got.Commit != "abc123" {
		t.Fatalf("Get() = %+v, want the stamped v1.2.3 and abc123", got)
	}
	if s := got.String(); !strings.HasPrefix(s, "v1.2.3 (commit abc123), go") {
		t.Fatalf("String() = %q, want it to start with the version and commit", s)
	}
}

func TestGet_DevByDefault(t *testing.T) {
	if Version != Dev {
		t.Skipf("this test binary was stamped with %q", Version)
	}
	if got := Get().Version; got != Dev {
		t.Fatalf("Get().Version = %q, want %q for a build without -ldflags", got, Dev)
	}
}
