// Package bench measures the operator on a real API server: how much longer 1,000 Workloads
// take to become 1,000 Deployments than applying the Deployments directly, the API writes in
// the steady state, and the operator's memory. `make bench` runs it:
//
//	go test -run='^$' -bench=. ./operator/...
package bench
