package testbed

import (
	"errors"
	"testing"

	"github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/provider"
)

// This package's tests link in no bed (testbed/host and testbed/incluster register
// themselves, and import this package): OpenBed says which package the run's placement needs.
func TestOpenBed_NamesThePackageOfAMissingBed(t *testing.T) {
	g := gomega.NewWithT(t)
	for providerName, want := range map[string]string{
		"kwok": "provider kwok runs its add-ons as host processes, and this program has no such bed (it does not import testbed/host)",
		"kind": "provider kind runs its add-ons in its clusters, and this program has no such bed (it does not import testbed/incluster)",
	} {
		_, err := OpenBed(BedOptions{Provider: providerName, StateRoot: t.TempDir()})
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(want)), providerName)
		g.Expect(errors.Is(err, provider.ErrNotSupported)).To(gomega.BeTrue(), providerName)
	}
}
