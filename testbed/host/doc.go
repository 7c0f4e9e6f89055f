// Package host is the bed whose add-ons run as host processes (placement host: the kwok and
// existing providers). It brings up and controls a Polykube federation from one
// machine: the clusters of a topology (kwok by default), a Git server on loopback serving a
// GitOps repository, Flux's source- and kustomize-controllers beside each cluster, and one
// operator process per cluster holding only that cluster's ServiceAccount token.
//
// Everything a run creates lives under its state directory
// (${XDG_STATE_HOME:-~/.local/state}/polykube/testbed/<run>): the provider's clusters, the
// Git repositories, the process records (see package proc) and state.json. Every command
// (up, status, fault, down) finds the run there, so the test bed survives between
// invocations without a supervisor process; see docs/decisions/0003-testbed-processes.md.
//
// The package registers its bed with testbed.OpenBed and its fault injectors with the fault
// table when it is imported; programs open it through testbed.OpenBed, as they open the
// in-cluster bed (testbed/incluster), and import it for that.
package host
