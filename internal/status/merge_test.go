package status

import (
	"errors"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// kinds returns "Kind:Object:cluster,cluster" for every disagreement, for compact assertions.
func kinds(r Report) []string {
	var out []string
	for _, d := range r.Disagreements {
		out = append(out, d.Kind+":"+d.Object+":"+strings.Join(d.Clusters, ","))
	}
	return out
}

func TestMerge_Healthy(t *testing.T) {
	g := NewWithT(t)
	r := Merge(healthyFleet(), Query{Timeout: 5 * time.Second})

	g.Expect(r.APIVersion).To(Equal(APIVersion))
	g.Expect(r.Disagreements).To(BeEmpty())
	g.Expect(r.Summary).To(Equal(Summary{ClustersQueried: 3, ClustersReachable: 3, Healthy: true, ExitCode: ExitOK}))
	g.Expect(r.Clusters).To(HaveEach(HaveField("NameSource", NameFromFederation)))
	g.Expect([]string{r.Clusters[0].Cluster, r.Clusters[1].Cluster, r.Clusters[2].Cluster}).To(Equal(fleetClusters))

	g.Expect(r.Workloads).To(HaveLen(2))
	billing := r.Workloads[0]
	g.Expect(billing.Name).To(Equal("billing-api"))
	g.Expect(billing.Ready).To(BeTrue())
	g.Expect(billing.DesiredTotal).To(BeEquivalentTo(6))
	g.Expect(billing.ReadyTotal).To(BeEquivalentTo(6))
	g.Expect(billing.Expected).To(Equal([]Share{{"alpha", 2}, {"beta", 2}, {"gamma", 2}}))
	web := r.Workloads[1]
	g.Expect(web.Clusters[2].Targeted).To(BeFalse())
	g.Expect(web.DesiredTotal).To(BeEquivalentTo(3))

	g.Expect(r.Federations).To(HaveLen(1))
	g.Expect(r.Federations[0].Copies).To(HaveEach(HaveField("Ready", "True")))
	g.Expect(r.Members).To(HaveLen(3))
	g.Expect(r.Members[1]).To(Equal(MemberRow{Name: "beta", Provider: "kwok", Region: "local", ClusterID: 2,
		InRoster: []string{"fleet"}, SeenBy: fleetClusters, LocalContext: "ctx-beta"}))
}

func TestMerge_Disagreements(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(s []Snapshot) []Snapshot
		query    Query
		want     []string // kinds(report), in order
		exit     int
		notReady []string // substrings expected in Summary.NotReady
	}{
		{
			name: "one cluster unreachable: the others are reported and its slice is unreported",
			mutate: func(s []Snapshot) []Snapshot {
				s[2] = unreachable(s[2], ReasonUnreachable)
				return s
			},
			want: []string{"UnreportedSlice:Workload shop/billing-api:gamma"},
			exit: ExitUnreachable,
		},
		{
			name: "copies with different specs also compute different allocations",
			mutate: func(s []Snapshot) []Snapshot {
				s[1].Workloads[0] = operated(weighted("shop", "billing-api", 9, fleetClusters...), "beta")
				s[1].Workloads[0].Generation, s[1].Workloads[0].Status.ObservedGeneration = 2, 2
				return s
			},
			want: []string{
				"SpecMismatch:Workload shop/billing-api:alpha,beta,gamma",
				"AllocationMismatch:Workload shop/billing-api:alpha,beta,gamma",
				"AllocationMismatch:Workload shop/billing-api:alpha,beta,gamma",
				"AllocationMismatch:Workload shop/billing-api:alpha,beta,gamma",
			},
			exit: ExitDisagreement,
		},
		{
			name: "equal specs with different spec hashes",
			mutate: func(s []Snapshot) []Snapshot {
				findWorkload(&s[2], "web").Status.SpecHash = "other"
				return s
			},
			want: []string{"SpecHashMismatch:Workload shop/web:alpha,beta,gamma"},
			exit: ExitDisagreement,
		},
		{
			name: "one operator computes another allocation from the same spec",
			mutate: func(s []Snapshot) []Snapshot {
				w := findWorkload(&s[1], "billing-api")
				w.Status.Targets[0].DesiredReplicas = 3 // alpha
				w.Status.Targets[2].DesiredReplicas = 1 // gamma
				return s
			},
			want: []string{
				"AllocationMismatch:Workload shop/billing-api:alpha,beta,gamma",
				"AllocationMismatch:Workload shop/billing-api:alpha,beta,gamma",
				"AllocationNotAsComputed:Workload shop/billing-api:beta",
			},
			exit: ExitDisagreement,
		},
		{
			name: "rosters differ",
			mutate: func(s []Snapshot) []Snapshot {
				s[2].Federations[0].Spec.Members = []string{"alpha", "beta"}
				return s
			},
			want: []string{"RosterMismatch:Federation fleet:alpha,beta,gamma"},
			exit: ExitDisagreement,
		},
		{
			name: "a federation copy is missing",
			mutate: func(s []Snapshot) []Snapshot {
				s[0].Federations = nil
				return s
			},
			// alpha's name now comes from its Workloads' status.cluster.
			want: []string{"MissingCopy:Federation fleet:alpha"},
			exit: ExitDisagreement,
		},
		{
			name: "a target whose operator wrote no status is unreported and not ready",
			mutate: func(s []Snapshot) []Snapshot {
				w := findWorkload(&s[2], "billing-api")
				w.Status = polykubev1alpha1.WorkloadStatus{}
				return s
			},
			want:     []string{"UnreportedSlice:Workload shop/billing-api:gamma"},
			exit:     ExitDisagreement,
			notReady: []string{"Workload shop/billing-api"},
		},
		{
			name: "a Deployment runs in a cluster the Workload does not target",
			mutate: func(s []Snapshot) []Snapshot {
				s[2].Deployments = append(s[2].Deployments, deployment("shop", "web", 2))
				return s
			},
			want: []string{"UntargetedReplicas:Workload shop/web:gamma"},
			exit: ExitDisagreement,
		},
		{
			name: "a status reports replicas in a cluster the Workload does not target",
			mutate: func(s []Snapshot) []Snapshot {
				findWorkload(&s[2], "web").Status.ReadyReplicas = 1
				return s
			},
			want: []string{"UntargetedReplicas:Workload shop/web:gamma"},
			exit: ExitDisagreement,
		},
		{
			name: "a Workload missing from one reachable cluster",
			mutate: func(s []Snapshot) []Snapshot {
				s[2].Workloads = s[2].Workloads[1:]
				return s
			},
			want: []string{
				"MissingCopy:Workload shop/billing-api:gamma",
				"UnreportedSlice:Workload shop/billing-api:gamma",
			},
			exit: ExitDisagreement,
		},
		{
			name: "two contexts report the same cluster name",
			mutate: func(s []Snapshot) []Snapshot {
				s[2].Federations[0].Status.LocalCluster = "beta"
				return s
			},
			want: []string{
				"DuplicateClusterName:Cluster beta:beta",
				"UnreportedSlice:Workload shop/billing-api:gamma",
			},
			exit: ExitDisagreement,
		},
		{
			name: "ClusterMember copies differ",
			mutate: func(s []Snapshot) []Snapshot {
				s[0].ClusterMembers[2].Spec.Mesh.ClusterID = 9
				return s
			},
			want: []string{"MemberMismatch:ClusterMember gamma:alpha,beta,gamma"},
			exit: ExitDisagreement,
		},
		{
			name: "a copy the placement function rejects",
			mutate: func(s []Snapshot) []Snapshot {
				w := findWorkload(&s[0], "web")
				w.Spec.Distribution.Targets[0].Weight = nil
				return s
			},
			want: []string{
				"InvalidSpec:Workload shop/web:alpha",
				"SpecMismatch:Workload shop/web:alpha,beta,gamma",
			},
			exit: ExitDisagreement,
		},
		{
			name: "a slice still rolling out is not ready, and nothing disagrees",
			mutate: func(s []Snapshot) []Snapshot {
				w := findWorkload(&s[1], "billing-api")
				w.Status.ReadyReplicas, w.Status.Phase = 1, polykubev1alpha1.PhaseProgressing
				return s
			},
			exit:     ExitNotReady,
			notReady: []string{"Workload shop/billing-api"},
		},
		{
			name: "a status behind the spec is not ready and is not compared with the placement",
			mutate: func(s []Snapshot) []Snapshot {
				w := findWorkload(&s[0], "web")
				w.Generation = 2
				w.Status.Targets[0].DesiredReplicas = 7
				return s
			},
			want:     []string{"AllocationMismatch:Workload shop/web:alpha,beta,gamma"},
			exit:     ExitDisagreement,
			notReady: []string{"Workload shop/web"},
		},
		{
			name: "a Federation whose mesh checks fail is not ready",
			mutate: func(s []Snapshot) []Snapshot {
				c := &s[0].Federations[0].Status.Conditions[4]
				c.Status, c.Reason = metav1.ConditionFalse, polykubev1alpha1.ReasonPodCIDROverlap
				return s
			},
			exit:     ExitNotReady,
			notReady: []string{"Federation fleet in alpha: Ready=False"},
		},
		{
			name:     "a workload pattern that matches nothing",
			mutate:   func(s []Snapshot) []Snapshot { return s },
			query:    Query{Names: []string{"billing-*", "nope"}},
			exit:     ExitNotReady,
			notReady: []string{`no Workload matches "nope"`},
		},
		{
			name: "unreachable wins over disagreement and not ready",
			mutate: func(s []Snapshot) []Snapshot {
				s[0] = unreachable(s[0], ReasonTimeout)
				s[2].Federations[0].Spec.Members = []string{"alpha", "beta"}
				findWorkload(&s[1], "web").Status.Phase = polykubev1alpha1.PhaseDegraded
				return s
			},
			want: []string{
				"UnreportedSlice:Workload shop/billing-api:alpha",
				"UnreportedSlice:Workload shop/web:alpha",
				"RosterMismatch:Federation fleet:beta,gamma",
			},
			exit:     ExitUnreachable,
			notReady: []string{"Workload shop/web"},
		},
		{
			name: "deployments that could not be listed make the view incomplete",
			mutate: func(s []Snapshot) []Snapshot {
				s[1].Deployments, s[1].Warnings = nil, []string{"list deployments.apps: Forbidden"}
				return s
			},
			exit: ExitUnreachable,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			r := Merge(tt.mutate(healthyFleet()), tt.query)
			if tt.want == nil {
				g.Expect(r.Disagreements).To(BeEmpty())
			} else {
				g.Expect(kinds(r)).To(Equal(tt.want), "disagreements: %+v", r.Disagreements)
			}
			g.Expect(r.Summary.ExitCode).To(Equal(tt.exit))
			g.Expect(r.Summary.Healthy).To(Equal(tt.exit == ExitOK))
			g.Expect(r.Summary.Disagreements).To(Equal(len(tt.want)))
			for _, n := range tt.notReady {
				g.Expect(r.Summary.NotReady).To(ContainElement(ContainSubstring(n)))
			}
			if len(tt.notReady) == 0 {
				g.Expect(r.Summary.NotReady).To(BeEmpty())
			}
			for _, d := range r.Disagreements {
				g.Expect(d.Clusters).NotTo(BeEmpty(), "every flag names the clusters involved: %+v", d)
				g.Expect(d.Message).NotTo(BeEmpty())
			}
		})
	}
}

func TestMerge_UnreachableClusterKeepsOthers(t *testing.T) {
	g := NewWithT(t)
	s := healthyFleet()
	s[1] = unreachable(s[1], ReasonForbidden)
	r := Merge(s, Query{})
	g.Expect(r.Clusters[1]).To(And(HaveField("Reachable", false), HaveField("Reason", ReasonForbidden),
		HaveField("Cluster", "ctx-beta"), HaveField("NameSource", NameFromContext)))
	g.Expect(r.Clusters[1].Message).To(ContainSubstring("polykube-status-reader"), "the message says what to do")
	g.Expect(r.Workloads[0].Clusters[1].State).To(Equal(StateUnknown))
	g.Expect(r.Workloads[0].Clusters[0].State).To(Equal(StatePresent))
	g.Expect(r.Workloads[0].ReadyTotal).To(BeEquivalentTo(4))
	g.Expect(r.Summary.Unreachable).To(Equal([]string{"ctx-beta"}))
	g.Expect(r.Disagreements[0].Message).To(ContainSubstring("unreadable context ctx-beta (Forbidden)"))
}

func TestResolveClusterName(t *testing.T) {
	fed := federation("fleet", "from-fed")
	w1, w2, w3 := weighted("a", "x", 1, "c"), weighted("a", "y", 1, "c"), weighted("a", "z", 1, "c")
	w1.Status.Cluster, w2.Status.Cluster, w3.Status.Cluster = "from-wl", "from-wl", "odd"
	tests := []struct {
		name       string
		snap       Snapshot
		want, from string
	}{
		{"federation first", Snapshot{Context: "ctx", Federations: []polykubev1alpha1.Federation{fed}, Workloads: []polykubev1alpha1.Workload{w1}}, "from-fed", NameFromFederation},
		{"most common workload status.cluster", Snapshot{Context: "ctx", Workloads: []polykubev1alpha1.Workload{w3, w1, w2}}, "from-wl", NameFromWorkload},
		{"context when the operator wrote nothing", Snapshot{Context: "ctx", Workloads: []polykubev1alpha1.Workload{weighted("a", "x", 1, "c")}}, "ctx", NameFromContext},
		{"context when unreachable", Snapshot{Context: "ctx", Err: errTest}, "ctx", NameFromContext},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			name, from := ResolveClusterName(tt.snap)
			g.Expect(name).To(Equal(tt.want))
			g.Expect(from).To(Equal(tt.from))
		})
	}
}

func TestMerge_NamespaceAndStaticWorkloads(t *testing.T) {
	g := NewWithT(t)
	static := weighted("ops", "cron", 0, "alpha")
	static.Spec.Distribution.Strategy, static.Spec.Distribution.Replicas = polykubev1alpha1.StrategyStatic, nil
	static.Spec.Distribution.Targets[0] = polykubev1alpha1.DistributionTarget{ClusterRef: "alpha", Replicas: ptr.To[int32](1)}
	s := healthyFleet()
	for i, c := range fleetClusters {
		s[i].Workloads = append(s[i].Workloads, operated(static, c))
	}
	r := Merge(s, Query{Namespace: "ops"})
	g.Expect(r.Namespace).To(Equal("ops"))
	g.Expect(r.Workloads).To(HaveLen(1))
	g.Expect(r.Workloads[0].Expected).To(Equal([]Share{{"alpha", 1}}))
	g.Expect(r.Summary.ExitCode).To(Equal(ExitOK))
}

var errTest = errors.New("test error")
