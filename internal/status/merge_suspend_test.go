package status

import (
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// suspend marks w as its operator does when spec.suspend is true (suspend.MarkSuspended).
func suspend(w *polykubev1alpha1.Workload) {
	w.Spec.Suspend = true
	w.Generation++
	w.Status.ObservedGeneration = w.Generation
	readyCondition(&w.Status.Conditions, polykubev1alpha1.ReadyCondition, w.Generation, metav1.ConditionUnknown, polykubev1alpha1.ReasonSuspended,
		"spec.suspend is true: the operator changes nothing for this Workload in this cluster")
}

// suspendedFleet: beta suspended billing-api (a hot-patch during an incident), gamma suspended
// its ServiceEndpoint web and alpha its DatastoreBinding web-db; everything else is healthy.
func suspendedFleet() Report {
	s := healthyFleet()
	suspend(findWorkload(&s[1], "billing-api"))
	se := serviceEndpoint("shop", "web", metav1.ConditionUnknown, polykubev1alpha1.ReasonSuspended, "spec.suspend is true")
	se.Spec.Suspend = true
	s[2].ServiceEndpoints = append(s[2].ServiceEndpoints, se)
	b := binding("shop", "web-db", "web", metav1.ConditionUnknown, polykubev1alpha1.ReasonSuspended, "spec.suspend is true")
	b.Spec.Suspend = true
	s[0].DatastoreBindings = append(s[0].DatastoreBindings, b)
	return Merge(s, Query{Namespace: "shop"})
}

func TestMerge_SuspendedCopiesAreMarkedNotFailing(t *testing.T) {
	g := NewWithT(t)
	r := suspendedFleet()
	var billing WorkloadRow
	for _, w := range r.Workloads {
		if w.Name == "billing-api" {
			billing = w
		}
	}
	g.Expect(billing.Clusters[1].Suspended).To(BeTrue(), "beta's copy is suspended")
	g.Expect(billing.Clusters[0].Suspended).To(BeFalse())
	g.Expect(r.Disagreements).To(BeEmpty(), "spec.suspend is a per-cluster switch, not a spec disagreement")
	g.Expect(r.Failures).To(BeEmpty())
	g.Expect(r.Summary.NotReady).To(BeEmpty())
	g.Expect(r.Summary.ExitCode).To(Equal(ExitOK))
	var suspended []string
	for _, n := range r.Notices {
		if n.Kind == NoticeSuspended {
			suspended = append(suspended, n.Object+"@"+n.Clusters[0])
		}
	}
	g.Expect(suspended).To(ConsistOf("Workload shop/billing-api@beta", "ServiceEndpoint shop/web@gamma", "DatastoreBinding shop/web-db@alpha"))
}

func TestPrintReport_SuspendedGolden(t *testing.T) {
	r := suspendedFleet()
	golden(t, "fleet-suspended.table.golden", printed(t, r, FormatTable, ViewWorkloads, false))
	golden(t, "fleet-suspended.json.golden", printed(t, r, FormatJSON, "", false))
}
