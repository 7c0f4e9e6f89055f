// Package soak hunts the defects no scenario was written for: on a test-bed federation it takes
// a seeded random walk of faults and edits (API server stopped, operator killed, Git or Flux
// down, Workloads scaled and the roster relabelled through Git, a binding's Secret deleted and
// restored) over Workloads of every distribution, and checks the fleet's invariants all along:
//
//   - no Deployment of a Workload that stayed targeted in its cluster is deleted or replaced;
//   - no pod template of a Workload whose spec did not change is rewritten (pods would roll),
//     a bound Workload's included while its Secret is missing (the operator keeps the env vars
//     it injected);
//   - no Deployment runs fewer replicas than the smallest allocation it was given since the
//     fleet last converged (a fault may hold replicas, never take them away);
//   - after every step, once its faults are repaired, every cluster converges within a bound
//     (the Deployment has its allocation, the Workload reports Ready for its generation), and
//     polykube-status, reading every cluster, exits 0 then and only then.
//
// The walk is a pure function of the seed (Walk), so a violation is replayed by running the same
// seed: the report names the step. The checks are pure functions over observations (Tracker),
// unit-tested without a cluster; Run drives them over a testbed.Bed.
package soak
