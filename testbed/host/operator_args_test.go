package host

import (
	"testing"

	"github.com/onsi/gomega"
)

// The operator runs without leader election unless the cluster's state asks for it; then it
// names the Lease's namespace, which a process outside the cluster cannot default.
func TestOperatorArgs_LeaderElection(t *testing.T) {
	g := gomega.NewWithT(t)
	off := operatorArgs("alpha", 18080, 18081, false, "polykube-system")
	g.Expect(off).To(gomega.Equal([]string{"--cluster-name=alpha", "--metrics-bind-address=127.0.0.1:18080", "--health-probe-bind-address=127.0.0.1:18081"}))
	on := operatorArgs("alpha", 18080, 18081, true, "polykube-system")
	g.Expect(on).To(gomega.Equal(append(off, "--leader-elect", "--leader-election-namespace=polykube-system")))
}
