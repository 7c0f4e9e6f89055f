package status

import (
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// failingSince is when the fixtures' failing conditions last changed.
var failingSince = metav1.NewTime(time.Date(2026, 12, 3, 9, 0, 0, 0, time.UTC))

// readyCondition sets the Ready condition of conds for generation gen.
func readyCondition(conds *[]metav1.Condition, typ string, gen int64, status metav1.ConditionStatus, reason, msg string) {
	for i := range *conds {
		if (*conds)[i].Type == typ {
			*conds = append((*conds)[:i], (*conds)[i+1:]...)
			break
		}
	}
	*conds = append(*conds, metav1.Condition{Type: typ, Status: status, Reason: reason, Message: msg,
		ObservedGeneration: gen, LastTransitionTime: failingSince})
}

// reconcileFailed is w as an operator writes it when its reconcile fails after it recorded the
// generation: observedGeneration current, the slice as it was, Ready=False/ReconcileFailed.
func reconcileFailed(w *polykubev1alpha1.Workload, msg string) {
	readyCondition(&w.Status.Conditions, polykubev1alpha1.ReadyCondition, w.Generation, metav1.ConditionFalse, polykubev1alpha1.ReasonReconcileFailed, msg)
}

func serviceEndpoint(ns, name string, status metav1.ConditionStatus, reason, msg string) polykubev1alpha1.ServiceEndpoint {
	se := polykubev1alpha1.ServiceEndpoint{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       polykubev1alpha1.ServiceEndpointSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: name}},
		Status:     polykubev1alpha1.ServiceEndpointStatus{ObservedGeneration: 1},
	}
	readyCondition(&se.Status.Conditions, polykubev1alpha1.ReadyCondition, 1, status, reason, msg)
	return se
}

func binding(ns, name, workload string, status metav1.ConditionStatus, reason, msg string) polykubev1alpha1.DatastoreBinding {
	b := polykubev1alpha1.DatastoreBinding{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec:       polykubev1alpha1.DatastoreBindingSpec{WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: workload}},
		Status:     polykubev1alpha1.DatastoreBindingStatus{ObservedGeneration: 1},
	}
	readyCondition(&b.Status.Conditions, polykubev1alpha1.BoundCondition, 1, status, reason, msg)
	readyCondition(&b.Status.Conditions, polykubev1alpha1.ReadyCondition, 1, status, reason, msg)
	return b
}

func failures(r Report) []string {
	var out []string
	for _, f := range r.Failures {
		out = append(out, f.Kind+":"+f.Namespace+"/"+f.Name+":"+f.Cluster+":"+f.Reason)
	}
	return out
}

// TestMerge_Failures_WorkloadReconcileFailed: beta's operator recorded the generation, then
// failed; its slice still runs as before. That is a failure of beta, not a healthy fleet.
func TestMerge_Failures_WorkloadReconcileFailed(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	reconcileFailed(findWorkload(&s[1], "billing-api"), `invalid resource name "shop/ledger-db": [may not contain '/']; the operator retries`)
	r := Merge(s, Query{Namespace: "shop"})

	g.Expect(failures(r)).To(Equal([]string{"Workload:shop/billing-api:beta:ReconcileFailed"}))
	g.Expect(r.Failures[0].Message).To(ContainSubstring("shop/ledger-db"))
	g.Expect(r.Failures[0].Since).To(Equal(&failingSince))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitFailing))
	g.Expect(r.Summary.Failing).To(Equal([]string{"Workload shop/billing-api in beta: ReconcileFailed"}))
	row := workloadRow(r, "billing-api")
	g.Expect(row.Ready).To(BeFalse())
	g.Expect(row.Clusters[1].Failure).To(HaveField("Reason", polykubev1alpha1.ReasonReconcileFailed))
	g.Expect(row.Clusters[0].Failure).To(BeNil())

	table := string(printed(t, r, FormatTable, ViewWorkloads, false))
	g.Expect(table).To(MatchRegexp(`billing-api\s+shop\s+2/2 Ready\s+2/2 ReconcileFailed\s+2/2 Ready`))
	g.Expect(table).To(MatchRegexp(`FAILING\s+CLUSTER\s+REASON\s+SINCE\s+MESSAGE`))
	g.Expect(table).To(ContainSubstring("an operator reports a failure (exit 7)"))
}

// TestMerge_Failures_NotBlamedOnVersionSkew: a failing operator that left its status's spec hash
// behind is named as the cause of the mismatch, not version skew.
func TestMerge_Failures_NotBlamedOnVersionSkew(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	w := findWorkload(&s[1], "billing-api")
	w.Status.SpecHash = "hash-of-the-last-spec-it-finished"
	reconcileFailed(w, "Deployment shop/billing-api: the server could not find the requested resource")
	r := Merge(s, Query{Namespace: "shop"})

	g.Expect(kinds(r)).To(ContainElement("SpecHashMismatch:Workload shop/billing-api:alpha,beta,gamma"))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitFailing), "the failure explains the mismatch, and wins over it")
	for _, d := range r.Disagreements {
		if d.Kind == DisagreeSpecHash {
			g.Expect(d.Message).To(ContainSubstring("beta's operator reports Ready=False (ReconcileFailed) for this Workload"))
		}
	}
}

// TestMerge_Failures_TransientReasonsAreNotFailures: a slice rolling out or a Deployment still
// pending is not ready, not failing.
func TestMerge_Failures_TransientReasonsAreNotFailures(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	w := findWorkload(&s[1], "web")
	w.Status.ReadyReplicas, w.Status.Phase = 0, polykubev1alpha1.PhaseProgressing
	readyCondition(&w.Status.Conditions, polykubev1alpha1.ReadyCondition, w.Generation, metav1.ConditionFalse, polykubev1alpha1.ReasonProgressing, "0 of 1 ready")
	s[0].ServiceEndpoints = []polykubev1alpha1.ServiceEndpoint{serviceEndpoint("shop", "web", metav1.ConditionTrue, polykubev1alpha1.ReasonWorkloadNotFound, "no local backends")}
	s[0].DatastoreBindings = []polykubev1alpha1.DatastoreBinding{binding("shop", "web-db", "web", metav1.ConditionFalse, polykubev1alpha1.ReasonProgressing, "waiting for the Workload reconciler")}
	r := Merge(s, Query{Namespace: "shop"})
	g.Expect(r.Failures).To(BeEmpty())
	g.Expect(r.Summary.ExitCode).To(Equal(ExitNotReady))
	g.Expect(r.Summary.NotReady).To(ContainElement("DatastoreBinding shop/web-db in alpha: Bound=False (Progressing): waiting for the Workload reconciler"))
}

// TestMerge_Failures_ServiceEndpointsAndBindings: a ServiceEndpoint in Conflict and a binding
// whose Secret is missing are failures of their cluster, whatever the Workloads report.
func TestMerge_Failures_ServiceEndpointsAndBindings(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	s[0].ServiceEndpoints = []polykubev1alpha1.ServiceEndpoint{serviceEndpoint("shop", "billing-api", metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded, "in place")}
	s[2].ServiceEndpoints = []polykubev1alpha1.ServiceEndpoint{serviceEndpoint("shop", "billing-api", metav1.ConditionFalse, polykubev1alpha1.ReasonConflict, "Service shop/billing-api exists and was not created by this ServiceEndpoint")}
	s[1].DatastoreBindings = []polykubev1alpha1.DatastoreBinding{binding("shop", "ledger", "billing-api", metav1.ConditionFalse, polykubev1alpha1.ReasonSecretNotFound, "Secret shop/ledger-db not found")}
	// In another namespace than the one asked for: not read, not reported.
	s[1].DatastoreBindings = append(s[1].DatastoreBindings, binding("other", "x", "x", metav1.ConditionFalse, polykubev1alpha1.ReasonSecretNotFound, "-"))
	r := Merge(s, Query{Namespace: "shop"})

	g.Expect(failures(r)).To(Equal([]string{
		"DatastoreBinding:shop/ledger:beta:SecretNotFound",
		"ServiceEndpoint:shop/billing-api:gamma:Conflict",
	}))
	g.Expect(r.Failures[0].Condition).To(Equal(polykubev1alpha1.BoundCondition))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitFailing))

	// A name filter applies to the Workload they serve.
	g.Expect(Merge(s, Query{Namespace: "shop", Names: []string{"web"}}).Failures).To(BeEmpty())
	g.Expect(failures(Merge(s, Query{Namespace: "shop", Names: []string{"billing-*"}}))).To(HaveLen(2))
}

// TestMerge_Failures_UnreachableStillWins: an incomplete view comes first.
func TestMerge_Failures_UnreachableStillWins(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	reconcileFailed(findWorkload(&s[1], "billing-api"), "boom")
	s[2] = unreachable(s[2], ReasonUnreachable)
	r := Merge(s, Query{Namespace: "shop"})
	g.Expect(r.Summary.ExitCode).To(Equal(ExitUnreachable))
	g.Expect(r.Summary.Failing).To(HaveLen(1))
}

// surgeFleet: every cluster runs checkout and sees both peers short of their whole share (no
// view of the mesh at all), while each reports its own slice ready.
func surgeFleet() []Snapshot {
	snaps := healthyFleet()
	for i, c := range fleetClusters {
		others := placement.Deficits{}
		for _, o := range fleetClusters {
			if o != c {
				others[o] = 3
			}
		}
		snaps[i].Workloads = append(snaps[i].Workloads, sees(failingOver(), c, others))
	}
	return snaps
}

func warnings(r Report) []string {
	var out []string
	for _, n := range r.Notices {
		if n.Level == LevelWarning {
			out = append(out, n.Kind+":"+n.Object+":"+strings.Join(n.Clusters, ","))
		}
	}
	return out
}

func TestMerge_Failover_FleetWideSurgeIsAWarning(t *testing.T) {
	g := NewWithT(t)
	r := Merge(surgeFleet(), Query{Namespace: "shop"})
	g.Expect(warnings(r)).To(ContainElement("FailoverSurge:Workload shop/checkout:alpha,beta,gamma"))
	for _, n := range r.Notices {
		if n.Kind == NoticeFailoverSurge {
			g.Expect(n.Message).To(And(ContainSubstring("every target absorbs its peers' share"), ContainSubstring("runs 18 replicas for a total of 9")))
		}
	}
	g.Expect(r.Summary.ExitCode).To(Equal(ExitOK), "a warning does not change the exit code")
	table := string(printed(t, r, FormatTable, ViewWorkloads, false))
	g.Expect(table).To(MatchRegexp(`FailoverSurge \(warning\)\s+Workload shop/checkout`))
}

// TestMerge_Failover_ClaimedDeficitCheckedAgainstThePeer: alpha and beta absorb gamma's share,
// but gamma reports its 3 replicas ready itself.
func TestMerge_Failover_ClaimedDeficitCheckedAgainstThePeer(t *testing.T) {
	g := NewWithT(t)
	s := failoverFleet()
	*findWorkload(&s[2], "checkout") = sees(failingOver(), "gamma", nil)
	r := Merge(s, Query{Namespace: "shop"})
	g.Expect(warnings(r)).To(Equal([]string{
		"DeficitNotConfirmed:Workload shop/checkout:alpha,gamma",
		"DeficitNotConfirmed:Workload shop/checkout:beta,gamma",
	}))
	g.Expect(r.Notices[len(r.Notices)-1].Message).To(ContainSubstring("beta absorbs 3 for gamma, but gamma reports 3/3 ready itself"))

	// Where the peer confirms it (failoverFleet: gamma 0/3), nothing is said.
	g.Expect(warnings(Merge(failoverFleet(), Query{Namespace: "shop"}))).To(BeEmpty())
}

// TestPrintReport_EscapesClusterText: a condition message is written by whoever can write the
// status in that cluster. Printed raw, an escape sequence in it would drive the reader's
// terminal (set its title, clear the screen, hide lines); the table shows it escaped.
func TestPrintReport_EscapesClusterText(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	reconcileFailed(findWorkload(&s[1], "billing-api"), "boom\x1b]0;owned\x07\x1b[2J\rnext line\n\u202eevil\u009b")
	r := Merge(s, Query{Namespace: "shop"})

	plain := string(printed(t, r, FormatTable, ViewWorkloads, false))
	g.Expect(plain).NotTo(ContainSubstring("\x1b"), "no escape character at all without colour")
	g.Expect(plain).To(ContainSubstring(`boom\x1b]0;owned\x07\x1b[2J\rnext line\n\u202eevil\u009b`))
	g.Expect(plain).NotTo(ContainSubstring("\r"))

	colored := string(printed(t, r, FormatTable, ViewWorkloads, true))
	g.Expect(colored).NotTo(Or(ContainSubstring("\x1b]"), ContainSubstring("\x1b[2J"), ContainSubstring("\x07")))
	g.Expect(colored).To(ContainSubstring(`\x1b[2J`))

	g.Expect(string(printed(t, r, FormatYAML, "", false))).NotTo(ContainSubstring("\x1b"))
	g.Expect(string(printed(t, r, FormatJSON, "", false))).NotTo(ContainSubstring("\x1b"))
}

// TestMerge_ReadyConditionBehindTheGeneration: the operator recorded generation 2 in
// status.observedGeneration, but its Ready condition still speaks of generation 1: it has not
// finished with the spec, whatever the replica counts say.
func TestMerge_ReadyConditionBehindTheGeneration(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	for i := range s {
		w := findWorkload(&s[i], "web")
		w.Generation, w.Status.ObservedGeneration = 2, 2
		readyCondition(&w.Status.Conditions, polykubev1alpha1.ReadyCondition, 2, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded, "")
	}
	w := findWorkload(&s[1], "web")
	readyCondition(&w.Status.Conditions, polykubev1alpha1.ReadyCondition, 1, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded, "")
	r := Merge(s, Query{Namespace: "shop"})
	g.Expect(workloadRow(r, "web").NotReady).To(Equal([]string{"beta: its Ready condition is for generation 1, the spec is at generation 2 (the operator has not finished with it)"}))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitNotReady))
}

// TestMerge_Failures_OperatorRefusedItsIdentity: an operator started in beta as another member
// refuses to run and says so on beta's ClusterMember: nothing reconciles there, whatever the
// Workloads' last status says.
func TestMerge_Failures_OperatorRefusedItsIdentity(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	for i := range s[1].ClusterMembers {
		if cm := &s[1].ClusterMembers[i]; cm.Name == "beta" {
			readyCondition(&cm.Status.Conditions, polykubev1alpha1.OperatorIdentityCondition, 0, metav1.ConditionFalse, polykubev1alpha1.ReasonIdentityMismatch,
				`this cluster is pinned to "beta", but the operator started with --cluster-name "gamma"`)
		}
	}
	r := Merge(s, Query{Namespace: "shop", Names: []string{"web"}})
	g.Expect(failures(r)).To(Equal([]string{"ClusterMember:/beta:beta:IdentityMismatch"}))
	g.Expect(r.Failures[0].Condition).To(Equal(polykubev1alpha1.OperatorIdentityCondition))
	g.Expect(r.Summary.Failing).To(Equal([]string{"ClusterMember beta in beta: IdentityMismatch"}))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitFailing))
}
