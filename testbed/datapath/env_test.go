package datapath

import (
	"testing"
	"time"

	. "github.com/onsi/gomega"

	"github.com/polykube/polykube/testbed/topology"
)

// The waits of the in-cluster bed are the topology's: a topology that tunes one is valid, and
// its value is the one the bed waits with; one it leaves alone keeps the default.
func TestEnvWait_TopologyTunesTheInClusterWaits(t *testing.T) {
	g := NewWithT(t)
	top := topology.Default()
	top.Waits = map[string]topology.Wait{
		"rollout": {Timeout: topology.Duration{Duration: 7 * time.Second}, Interval: topology.Duration{Duration: time.Second}},
		"probe":   {Timeout: topology.Duration{Duration: 3 * time.Second}},
	}
	g.Expect(top.Validate()).To(Succeed())
	e := &Env{Topology: top}
	g.Expect(e.wait("rollout").Timeout.Duration).To(Equal(7 * time.Second))
	g.Expect(e.wait("rollout").Interval.Duration).To(Equal(time.Second))
	g.Expect(e.wait("probe").Timeout.Duration).To(Equal(3 * time.Second))
	g.Expect(e.wait("probe").Interval.Duration).To(Equal(2*time.Second), "an untuned interval keeps the default")
	g.Expect(e.wait("mesh-ready").Timeout.Duration).To(Equal(10*time.Minute), "an untuned wait keeps the default")
}
