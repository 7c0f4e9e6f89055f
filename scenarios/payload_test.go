package scenarios

import (
	"strings"
	"testing"

	"github.com/polykube/polykube/testbed/datapath"
)

func TestPayloadRun_Check(t *testing.T) {
	whole := func(n int, cluster string, secs float64) datapath.CallRecord {
		return datapath.CallRecord{N: n, Cluster: cluster, Bytes: 1 << 20, Seconds: secs}
	}
	run := payloadRun{from: "alpha", service: "echo", bytes: 1 << 20, calls: []datapath.CallRecord{
		whole(0, "beta", 0.5), whole(1, "gamma", 0.25), whole(2, "beta", 1),
	}}
	line, err := run.check()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 answers of 1024 KiB", "every one whole", "beta=2", "gamma=1", "500 ms median (250–1000)", "2.0 MiB/s"} {
		if !strings.Contains(line, want) {
			t.Errorf("the figures %q do not say %q", line, want)
		}
	}

	run.calls = append(run.calls,
		datapath.CallRecord{N: 3, Error: "the answer stopped after 65536 of 1048576 bytes: unexpected EOF"},
		datapath.CallRecord{N: 4, Cluster: "gamma", Bytes: 1000})
	_, err = run.check()
	if err == nil {
		t.Fatal("a call cut short and one with too few bytes passed")
	}
	for _, want := range []string{"2 of 5 answers", "call 3: the answer stopped after 65536", "call 4 (from gamma): 1000 of 1048576 bytes"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error %q does not say %q", err, want)
		}
	}

	if _, err := (payloadRun{from: "alpha", bytes: 1 << 20}).check(); err == nil || !strings.Contains(err.Error(), "no answer was fetched") {
		t.Errorf("no calls at all passed, or said something else: %v", err)
	}
}
