// Package bench measures the operator on a real API server: how much longer 1,000 Workloads
// take to become 1,000 Deployments than applying the Deployments directly, the API writes in
// the steady state, and the operator's memory (BenchmarkConverge1000Workloads); and what a
// cluster's objects that Polykube did not make cost it: its memory beside a bare manager's with
// 10,000 foreign Deployments, Services and EndpointSlices present, and the reconciles their
// changes cause (BenchmarkForeignObjects, goal 0). `make bench` runs them:
//
//	go test -run='^$' -bench=. ./operator/...
package bench
