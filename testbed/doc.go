// Package testbed brings up and controls a hermetic Polykube federation on one machine: the
// clusters of a topology (kwok by default), a Git server on loopback serving a GitOps
// repository, Flux's source- and kustomize-controllers beside each cluster, and one operator
// process per cluster holding only that cluster's ServiceAccount token.
//
// Everything a run creates lives under its state directory
// (${XDG_STATE_HOME:-~/.local/state}/polykube/testbed/<run>): the provider's clusters, the
// Git repositories, the process records (see package proc) and state.json. Every command
// (up, status, fault, down) finds the run there, so the test bed survives between
// invocations without a supervisor process; see docs/decisions/0003-testbed-processes.md.
package testbed
