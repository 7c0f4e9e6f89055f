// Package bench measures the operator on a real API server: how much longer 1,000 Workloads
// take to become 1,000 Deployments than applying the Deployments directly, the API writes in
// the steady state, and the operator's memory (BenchmarkConverge1000Workloads); and what a
// cluster's objects that Polykube did not make cost it: its memory beside a bare manager's with
// 10,000 foreign Deployments, Services and EndpointSlices present, and the reconciles their
// changes cause (BenchmarkForeignObjects, goal 0); and what one cluster costs as the roster grows
// from 3 to ClusterMesh's 511 members, with the peers' endpoints churning (BenchmarkFleetSize,
// goal 2: reconcile CPU and bytes per status write, status writes caused by peer churn, writes
// for one member added); and the operator at W Workloads (POLYKUBE_BENCH_W, default 10,000) in a
// cluster whose foreign Deployments and EndpointSlices churn, against a plain client making its
// writes, at 1,000 and at W (BenchmarkConvergeAtScale, issue 40 goal 1: T / plain <= 1.2,
// T(W)/T(1,000) <= 1.1 × W/1,000). `make bench` runs them:
//
//	go test -run='^$' -bench=. ./operator/...
package bench
