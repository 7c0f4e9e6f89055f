package datapath

import "regexp"

// The versions the datapath tier is pinned to, in one place. The e2e workflow
// (.github/workflows/e2e-datapath.yaml) installs exactly this flux CLI; a test keeps the two in
// step. Cilium needs no CLI: the test bed installs its Helm chart from the Cilium module with
// the Helm SDK. They were chosen offline: Cilium 1.20.2 and Flux v2.9.5 are the newest tags the
// Go module proxy lists for github.com/cilium/cilium and github.com/fluxcd/flux2/v2. k0s and
// k0sctl were read from snapshots of their repositories (the module proxy refuses both): k0s
// v1.36.3+k0s.2 has the Kubernetes of the toolchain (v1.36.3), k0sctl v0.32.2 is the newest
// tag of its snapshot (2026-07-29).
const (
	// CiliumVersion is the Cilium release whose chart and images are installed.
	CiliumVersion = "1.20.2"
	// FluxVersion is the flux CLI release; `flux install` installs the controllers it embeds.
	FluxVersion = "v2.9.5"
	// K0sctlVersion is the k0sctl release for k0s on SSH hosts.
	K0sctlVersion = "v0.32.2"
	// K0sVersion is the k0s release k0sctl installs, and whose image runs k0s in Docker (with
	// images: local, the node image built here from its source, scripts/images/k0s-node.sh).
	K0sVersion = "v1.36.3+k0s.2"
)

// Tool is an external CLI the in-cluster bed drives, with the oldest version it works with.
type Tool struct {
	// Name is the program name looked up on $PATH.
	Name string
	// Pinned is the version the project tests with; Minimum the oldest that works.
	Pinned, Minimum string
	// VersionArgs print the client version without contacting a cluster.
	VersionArgs []string
	// versionRE finds the version in the output of VersionArgs (first group).
	versionRE *regexp.Regexp
	// Install says how to install the pinned version.
	Install string
}

// The CLIs the in-cluster bed drives.
var (
	FluxCLI = Tool{
		Name: "flux", Pinned: FluxVersion, Minimum: "v2.2.0",
		VersionArgs: []string{"version", "--client"},
		versionRE:   regexp.MustCompile(`flux:\s*v?(\d+\.\d+\.\d+)`),
		Install: "curl -L --fail https://github.com/fluxcd/flux2/releases/download/" + FluxVersion +
			"/flux_" + FluxVersion[1:] + "_linux_amd64.tar.gz | sudo tar xz -C /usr/local/bin   (macOS: brew install fluxcd/tap/flux)",
	}
	K0sctlCLI = Tool{
		Name: "k0sctl", Pinned: K0sctlVersion, Minimum: "v0.17.0",
		VersionArgs: []string{"version"},
		versionRE:   regexp.MustCompile(`version:\s*v?(\d+\.\d+\.\d+)`),
		Install:     "go install github.com/k0sproject/k0sctl@" + K0sctlVersion + "   (or a binary from the k0sctl releases page)",
	}
)
