package main

import (
	"strings"
	"testing"

	"github.com/polykube/polykube/testbed"
)

// TestFaultKinds_EveryBedInjects keeps the fault table, the beds' injectors and the CLI's help
// in sync: with every provider and both beds registered (as in this program), each bed injects
// every fault a provider it runs can have and nothing else, and `fault --help` lists every row
// with its help and the providers that can have it.
func TestFaultKinds_EveryBedInjects(t *testing.T) {
	if err := testbed.CheckInjectors(); err != nil {
		t.Errorf("the beds' injectors and the fault table disagree:\n%v", err)
	}
	cmd := newFaultCmd()
	for _, k := range testbed.FaultKinds {
		if !strings.Contains(cmd.Use, string(k.Fault)) {
			t.Errorf("fault %s is not in the usage line %q", k.Fault, cmd.Use)
		}
		for _, line := range k.Help {
			if !strings.Contains(cmd.Long, line) {
				t.Errorf("fault %s: its help line %q is not in `fault --help`", k.Fault, line)
			}
		}
		if k.Needs != "" {
			can := k.Providers()
			if len(can) == 0 {
				t.Errorf("fault %s needs the %s capability, which no registered provider has", k.Fault, k.Needs)
			}
			if !strings.Contains(cmd.Long, "(needs the "+string(k.Needs)+" capability: "+strings.Join(can, ", ")+")") {
				t.Errorf("fault %s: `fault --help` does not say which providers can have it (%v)", k.Fault, can)
			}
		}
	}
}
