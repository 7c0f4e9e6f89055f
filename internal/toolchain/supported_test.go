package toolchain

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// The README's "Supported versions" table says what the tests run against; it must name the
// versions the toolchain pins, or a pin moved and the docs did not.
func TestReadme_SupportedVersionsAreThePins(t *testing.T) {
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(data), "### Supported versions")
	if !ok {
		t.Fatal(`README.md has no "### Supported versions" section`)
	}
	rows := map[string]string{}
	row := regexp.MustCompile(`^\| ([^|]+?) \| ([^|]+?) \|`)
	inTable := false
	for _, line := range strings.Split(table, "\n") {
		if strings.HasPrefix(line, "|---") {
			continue
		}
		m := row.FindStringSubmatch(line)
		if m == nil {
			if inTable {
				break // the table's first line that is no row ends it
			}
			continue
		}
		inTable = true
		rows[m[1]] = m[2]
	}
	want := map[string]string{
		"Kubernetes": KubernetesVersion,
		"Cilium":     CiliumVersion,
		"Flux (source- and kustomize-controller)": FluxSourceControllerVersion,
		"Argo CD":    ArgoCDVersion,
		"Prometheus": PrometheusRelease,
		"kwok":       KwokVersion,
	}
	if FluxSourceControllerVersion != FluxKustomizeControllerVersion {
		t.Errorf("the table gives one Flux version, the pins two: source-controller %s, kustomize-controller %s",
			FluxSourceControllerVersion, FluxKustomizeControllerVersion)
	}
	for component, pin := range want {
		got, ok := rows[component]
		switch {
		case !ok:
			t.Errorf("README.md's supported versions have no row %q (pinned: %s)", component, pin)
		case got != pin:
			t.Errorf("README.md says %s %s, the toolchain pins %s: change the table with the pin", component, got, pin)
		}
	}
	for component := range rows {
		if _, ok := want[component]; !ok && component != "component" {
			t.Errorf("README.md's supported versions list %q, which this test does not check against a pin", component)
		}
	}
}
