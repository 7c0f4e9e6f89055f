// Package version holds the version stamped into every Polykube binary at build time. A release
// build sets both variables with the linker (make release does):
//
//	go build -ldflags "-X github.com/polykube/polykube/internal/version.Version=v0.1.0 \
//	  -X github.com/polykube/polykube/internal/version.Commit=$(git rev-parse HEAD)"
//
// A plain `go build` or `go run` leaves Version at "dev"; Commit then falls back to the VCS
// revision Go records in the binary, so a developer build still says what it was built from.
package version

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

// Dev is the Version of a binary built without the release's -ldflags.
const Dev = "dev"

// Set by -ldflags -X at release time; variables, not constants, so the linker can write them.
var (
	// Version is the release's semver tag (vX.Y.Z), or Dev.
	Version = Dev
	// Commit is the Git commit the binary was built from, or "" when unknown.
	Commit = ""
)

// Info is what a binary reports about itself.
type Info struct {
	Version   string `json:"version"`
	Commit    string `json:"commit,omitempty"`
	GoVersion string `json:"goVersion"`
	Platform  string `json:"platform"`
}

// Get returns the stamped version, with the commit from the build info when none was stamped.
func Get() Info {
	i := Info{Version: Version, Commit: Commit, GoVersion: runtime.Version(), Platform: runtime.GOOS + "/" + runtime.GOARCH}
	if i.Commit == "" {
		i.Commit = vcsRevision()
	}
	return i
}

// String is the one line `polykube-status version` and the operator's --version print.
func (i Info) String() string {
	s := i.Version
	if i.Commit != "" {
		s += " (commit " + i.Commit + ")"
	}
	return fmt.Sprintf("%s, %s, %s", s, i.GoVersion, i.Platform)
}

func vcsRevision() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, dirty string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = "-dirty"
			}
		}
	}
	if rev == "" {
		return ""
	}
	return rev + dirty
}
