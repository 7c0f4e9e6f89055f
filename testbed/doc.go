// Package testbed is what the two beds, the scenario harness and polykube-testbed share: the
// Bed interface and its optional abilities, OpenBed, the fault table, the demo story told
// against Bed, the health Report, where runs are kept (DefaultStateRoot, RunDir,
// RecordedRuns), and the names and helpers both beds deliver with (Scheme, ApplyCRDDir, the
// Flux and Argo CD objects).
//
// The beds are its siblings: testbed/host runs the add-ons as host processes (kwok,
// existing), testbed/incluster runs them in the clusters (kind, k0s). Each imports this
// package and registers itself from its own init (RegisterBed, RegisterInjectors,
// RegisterRunKind), as a provider registers itself (providers.go); OpenBed picks the bed
// registered for where the run's add-ons run. This package imports neither bed: it could
// not without an import cycle, as both need the interface and the table. The price is that
// a program opens only the beds it imports (a blank import in polykube-testbed's main and
// in the scenario harness); OpenBed names the missing package when one is not.
package testbed
