package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
)

// An upgrade moves one cluster's operator at a time, so for a while the clusters of one run
// run different operator binaries. On the host bed the operator is a host process, so
// a Deployment rollout is a stop of the process (SIGTERM, as the kubelet sends) and a start of
// another binary with the same arguments, credentials and ports.

// operatorBinary is the binary the cluster's operator runs: its own when UseOperator set one,
// else the one the operator add-on built from this checkout.
func (tb *Testbed) operatorBinary(cs *ClusterState) string {
	if cs.Operator.Binary != "" {
		return cs.Operator.Binary
	}
	return tb.state.Operator.Binary
}

// OperatorBinary is the operator binary the cluster runs, and whether it is the run's own
// (the one built from this checkout by the operator add-on).
func (tb *Testbed) OperatorBinary(cluster string) (string, bool) {
	tb.mu.Lock()
	defer tb.mu.Unlock()
	cs := tb.state.Clusters[cluster]
	if cs == nil {
		return "", false
	}
	return tb.operatorBinary(cs), cs.Operator.Binary == ""
}

// UseOperator moves the cluster's operator to another binary, as a rollout of the operator
// Deployment to a new image would: it stops the running process gracefully, records the
// binary in the run's state (so `up` and the operator fault start it again) and starts it
// with the same arguments and a fresh token. An empty binary moves the cluster back to the
// run's own operator. It returns once the new process answers its health probe.
func (tb *Testbed) UseOperator(ctx context.Context, cluster, binary string) error {
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	own := tb.state.Operator.Binary
	tb.mu.Unlock()
	if cs == nil {
		return fmt.Errorf("cluster %s is not up", cluster)
	}
	if own == "" {
		return fmt.Errorf("the run has no operator add-on: bring it up with the operator add-on before moving cluster %s to another operator", cluster)
	}
	if binary != "" {
		abs, err := filepath.Abs(binary)
		if err != nil {
			return err
		}
		fi, err := os.Stat(abs)
		if err != nil {
			return fmt.Errorf("the operator binary for cluster %s: %w (build the previous release's with make previous-operator)", cluster, err)
		}
		if fi.IsDir() || fi.Mode().Perm()&0o111 == 0 {
			return fmt.Errorf("the operator binary for cluster %s, %s, is not an executable file", cluster, abs)
		}
		if abs == own {
			abs = ""
		}
		binary = abs
	}
	what := "the run's own binary"
	if binary != "" {
		what = "binary " + binary
	}
	return tb.restartOperator(ctx, cluster, what, func(op *OpState) { op.Binary = binary })
}
