package federation

import (
	"context"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/rectest"
)

func newMember(name string, id int32, cidrs ...string) *polykubev1alpha1.ClusterMember {
	m := member(name, id, cidrs...)
	return &m
}

func newFederation(name string, members ...string) *polykubev1alpha1.Federation {
	return &polykubev1alpha1.Federation{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       polykubev1alpha1.FederationSpec{Members: members},
	}
}

// federationCondition reads a condition of a Federation from the API server.
func federationCondition(g Gomega, c client.Client, name, condType string) metav1.Condition {
	fed := &polykubev1alpha1.Federation{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, fed)).To(Succeed())
	cond := meta.FindStatusCondition(fed.Status.Conditions, condType)
	g.Expect(cond).NotTo(BeNil(), "Federation %s has no %s condition yet", name, condType)
	g.Expect(cond.ObservedGeneration).To(Equal(fed.Generation))
	return *cond
}

func TestReconciler_Federation_AllGood(t *testing.T) {
	g := NewWithT(t)
	c, fx := startReconcilers(t, "good-a")
	rectest.Create(t, c, newMember("good-a", 11, "10.11.0.0/16"))
	rectest.Create(t, c, newMember("good-b", 12, "10.12.0.0/16", "fd00:12::/56"))
	// The Federation is created once the manager's cache has both members (their reconciler,
	// which reads the same cache, has seen them): created earlier, its first reconcile may
	// not find good-b yet and rightly report it missing, an event this test says a healthy
	// roster never emits.
	g.Eventually(func(g Gomega) {
		for _, name := range []string{"good-a", "good-b"} {
			m := &polykubev1alpha1.ClusterMember{}
			g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, m)).To(Succeed())
			g.Expect(m.Status.ObservedGeneration).To(Equal(m.Generation), "ClusterMember %s not reconciled yet", name)
		}
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	rectest.Create(t, c, newFederation("good", "good-a", "good-b"))

	g.Eventually(func(g Gomega) {
		fed := &polykubev1alpha1.Federation{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: "good"}, fed)).To(Succeed())
		g.Expect(fed.Status.ObservedGeneration).To(Equal(fed.Generation))
		for _, typ := range []string{
			polykubev1alpha1.ClusterIdentifiedCondition, polykubev1alpha1.MembersPresentCondition,
			polykubev1alpha1.ClusterIDsValidCondition, polykubev1alpha1.ClusterNamesValidCondition,
			polykubev1alpha1.PodCIDRsDisjointCondition, polykubev1alpha1.LocalMemberListedCondition,
			polykubev1alpha1.ReadyCondition,
		} {
			cond := meta.FindStatusCondition(fed.Status.Conditions, typ)
			g.Expect(cond).NotTo(BeNil(), "condition %s", typ)
			g.Expect(cond.Status).To(Equal(metav1.ConditionTrue), "%s: %s", typ, cond.Message)
			g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonSucceeded))
		}
		g.Expect(fed.Status.LocalCluster).To(Equal("good-a"))
		g.Expect(fed.Status.Members).To(Equal([]polykubev1alpha1.FederationMemberStatus{
			{Name: "good-a", Present: true, Local: true, ClusterID: 11},
			{Name: "good-b", Present: true, ClusterID: 12},
		}))
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())

	// The ClusterMember this operator runs in is marked local, the other one not.
	g.Eventually(func(g Gomega) {
		for name, local := range map[string]bool{"good-a": true, "good-b": false} {
			m := &polykubev1alpha1.ClusterMember{}
			g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, m)).To(Succeed())
			g.Expect(m.Status.ObservedGeneration).To(Equal(m.Generation), "ClusterMember %s not reconciled yet", name)
			g.Expect(m.Status.Local).To(Equal(local), "ClusterMember %s", name)
		}
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())

	// Steady state: reconciles caused by metadata changes write nothing.
	writes := fx.WriteCount()
	fed := &polykubev1alpha1.Federation{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: "good"}, fed)).To(Succeed())
	fed.Annotations = map[string]string{"test/touch": "1"}
	g.Expect(c.Update(context.Background(), fed)).To(Succeed())
	touched := fed.ResourceVersion
	m := &polykubev1alpha1.ClusterMember{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: "good-b"}, m)).To(Succeed())
	m.Annotations = map[string]string{"test/touch": "1"}
	g.Expect(c.Update(context.Background(), m)).To(Succeed())
	g.Consistently(func(g Gomega) {
		got := &polykubev1alpha1.Federation{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: "good"}, got)).To(Succeed())
		g.Expect(got.ResourceVersion).To(Equal(touched), "the Federation was written in steady state")
		g.Expect(fx.WriteCount()).To(Equal(writes), "the reconcilers sent write requests in steady state")
	}).WithTimeout(quietPeriod).WithPolling(waitInterval).Should(Succeed())

	// A healthy roster emits no events.
	g.Expect(fx.Events()).To(BeEmpty())
}

// TestReconciler_Federation_FailingChecks creates one roster per ClusterMesh prerequisite it
// violates and expects that check False with its reason, a message naming the members at fault,
// Ready False, and one Warning event with the condition's reason.
func TestReconciler_Federation_FailingChecks(t *testing.T) {
	longName := "ln-" + strings.Repeat("x", 37)
	tests := []struct {
		name          string
		clusterName   string
		members       []*polykubev1alpha1.ClusterMember
		roster        []string
		maxClusters   int32
		wantType      string
		wantReason    string
		wantInMessage []string
	}{
		{
			name:        "duplicate cluster IDs",
			clusterName: "dup-a",
			members: []*polykubev1alpha1.ClusterMember{
				newMember("dup-a", 21, "10.21.0.0/16"), newMember("dup-b", 22, "10.22.0.0/16"), newMember("dup-c", 21, "10.23.0.0/16"),
			},
			roster:     []string{"dup-a", "dup-b", "dup-c"},
			wantType:   polykubev1alpha1.ClusterIDsValidCondition,
			wantReason: polykubev1alpha1.ReasonDuplicateClusterID, wantInMessage: []string{"dup-a and dup-c share cluster ID 21"},
		},
		{
			name:        "cluster ID above maxConnectedClusters",
			clusterName: "range-a",
			members:     []*polykubev1alpha1.ClusterMember{newMember("range-a", 31, "10.31.0.0/16"), newMember("range-b", 400, "10.32.0.0/16")},
			roster:      []string{"range-a", "range-b"},
			wantType:    polykubev1alpha1.ClusterIDsValidCondition,
			wantReason:  polykubev1alpha1.ReasonClusterIDOutOfRange, wantInMessage: []string{"range-b has 400", "1..255"},
		},
		{
			name:        "overlapping pod CIDRs",
			clusterName: "ov-a",
			members:     []*polykubev1alpha1.ClusterMember{newMember("ov-a", 41, "10.40.0.0/16"), newMember("ov-b", 42, "10.40.128.0/17")},
			roster:      []string{"ov-a", "ov-b"},
			wantType:    polykubev1alpha1.PodCIDRsDisjointCondition,
			wantReason:  polykubev1alpha1.ReasonPodCIDROverlap, wantInMessage: []string{"ov-a (10.40.0.0/16) and ov-b (10.40.128.0/17)"},
		},
		{
			name:        "two members behind one overlay endpoint",
			clusterName: "ep-a",
			members: []*polykubev1alpha1.ClusterMember{
				withOverlay(newMember("ep-a", 91, "10.91.0.0/16"), "203.0.113.7:51820"),
				withOverlay(newMember("ep-b", 92, "10.92.0.0/16"), "203.0.113.8:51820"),
				withOverlay(newMember("ep-c", 93, "10.93.0.0/16"), "203.0.113.7:51820"),
			},
			roster:     []string{"ep-a", "ep-b", "ep-c"},
			wantType:   polykubev1alpha1.OverlayEndpointsUniqueCondition,
			wantReason: polykubev1alpha1.ReasonDuplicateEndpoint, wantInMessage: []string{"ep-a and ep-c share overlay endpoint 203.0.113.7:51820"},
		},
		{
			name:        "member without a ClusterMember",
			clusterName: "mm-a",
			members:     []*polykubev1alpha1.ClusterMember{newMember("mm-a", 51, "10.51.0.0/16"), newMember("mm-b", 52, "10.52.0.0/16")},
			roster:      []string{"mm-a", "mm-b", "mm-c"},
			wantType:    polykubev1alpha1.MembersPresentCondition,
			wantReason:  polykubev1alpha1.ReasonMemberMissing, wantInMessage: []string{"1 of 3", "mm-c"},
		},
		{
			name:        "local cluster not listed",
			clusterName: "nl-a",
			members:     []*polykubev1alpha1.ClusterMember{newMember("nl-a", 61, "10.61.0.0/16"), newMember("nl-b", 62, "10.62.0.0/16")},
			roster:      []string{"nl-b"},
			wantType:    polykubev1alpha1.LocalMemberListedCondition,
			wantReason:  polykubev1alpha1.ReasonLocalMemberMissing, wantInMessage: []string{`"nl-a"`, "[nl-b]"},
		},
		{
			name:        "cluster name longer than 32 characters",
			clusterName: "long-a",
			members:     []*polykubev1alpha1.ClusterMember{newMember("long-a", 71, "10.71.0.0/16")},
			roster:      []string{"long-a", longName},
			wantType:    polykubev1alpha1.ClusterNamesValidCondition,
			wantReason:  polykubev1alpha1.ReasonInvalidClusterName, wantInMessage: []string{longName, "40 characters"},
		},
		{
			name:        "this cluster has no ClusterMember",
			clusterName: "ghost",
			members:     []*polykubev1alpha1.ClusterMember{newMember("seen-b", 81, "10.81.0.0/16")},
			roster:      []string{"ghost", "seen-b"},
			wantType:    polykubev1alpha1.ClusterIdentifiedCondition,
			wantReason:  polykubev1alpha1.ReasonClusterMemberMissing, wantInMessage: []string{`"ghost"`, "--cluster-name"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c, fx := startReconcilers(t, tc.clusterName)
			for _, m := range tc.members {
				rectest.Create(t, c, m)
			}
			fedName := "fed-" + tc.clusterName
			fed := newFederation(fedName, tc.roster...)
			fed.Spec.Mesh.MaxConnectedClusters = tc.maxClusters
			rectest.Create(t, c, fed)

			g.Eventually(func(g Gomega) {
				cond := federationCondition(g, c, fedName, tc.wantType)
				g.Expect(cond.Status).To(Equal(metav1.ConditionFalse), cond.Message)
				g.Expect(cond.Reason).To(Equal(tc.wantReason), cond.Message)
				for _, s := range tc.wantInMessage {
					g.Expect(cond.Message).To(ContainSubstring(s))
				}
				ready := federationCondition(g, c, fedName, polykubev1alpha1.ReadyCondition)
				g.Expect(ready.Status).To(Equal(metav1.ConditionFalse))
				g.Expect(ready.Message).To(ContainSubstring(tc.wantType))
			}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())

			warning := "Warning " + tc.wantReason + " " + tc.wantType + ": "
			g.Eventually(func() int { return fx.CountEvents(warning) }).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Equal(1), "events: %v", fx.Events())
			// The condition does not change any more, so no second event follows; Ready, which
			// repeats the checks, has no events of its own.
			g.Consistently(func() int { return fx.CountEvents(warning) }).WithTimeout(quietPeriod).WithPolling(waitInterval).Should(Equal(1), "events: %v", fx.Events())
			for _, e := range fx.Events() {
				g.Expect(e).NotTo(ContainSubstring(" Ready: "))
			}
		})
	}
}

// TestReconciler_Federation_RecoversWhenClusterMembersArrive checks that a ClusterMember change
// re-checks the Federation: the missing members, this cluster's own among them, appear, the
// conditions turn True and a Normal event reports each recovery once.
func TestReconciler_Federation_RecoversWhenClusterMembersArrive(t *testing.T) {
	g := NewWithT(t)
	c, fx := startReconcilers(t, "late-a")
	rectest.Create(t, c, newMember("late-b", 91, "10.91.0.0/16"))
	rectest.Create(t, c, newFederation("late", "late-a", "late-b"))

	g.Eventually(func(g Gomega) {
		cond := federationCondition(g, c, "late", polykubev1alpha1.ClusterIdentifiedCondition)
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonClusterMemberMissing))
		cond = federationCondition(g, c, "late", polykubev1alpha1.MembersPresentCondition)
		g.Expect(cond.Reason).To(Equal(polykubev1alpha1.ReasonMemberMissing))
		g.Expect(cond.Message).To(ContainSubstring("late-a"))
		fed := &polykubev1alpha1.Federation{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: "late"}, fed)).To(Succeed())
		g.Expect(fed.Status.Members).To(ContainElement(polykubev1alpha1.FederationMemberStatus{Name: "late-a", Local: true}))
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	g.Eventually(func() int {
		return fx.CountEvents("Warning " + polykubev1alpha1.ReasonClusterMemberMissing + " " + polykubev1alpha1.ClusterIdentifiedCondition)
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Equal(1), "events: %v", fx.Events())

	rectest.Create(t, c, newMember("late-a", 92, "10.92.0.0/16"))

	g.Eventually(func(g Gomega) {
		ready := federationCondition(g, c, "late", polykubev1alpha1.ReadyCondition)
		g.Expect(ready.Status).To(Equal(metav1.ConditionTrue), ready.Message)
		fed := &polykubev1alpha1.Federation{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: "late"}, fed)).To(Succeed())
		g.Expect(fed.Status.Members).To(ContainElement(polykubev1alpha1.FederationMemberStatus{Name: "late-a", Present: true, Local: true, ClusterID: 92}))
		m := &polykubev1alpha1.ClusterMember{}
		g.Expect(c.Get(context.Background(), client.ObjectKey{Name: "late-a"}, m)).To(Succeed())
		g.Expect(m.Status.Local).To(BeTrue())
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	g.Eventually(func() int {
		return fx.CountEvents("Normal " + polykubev1alpha1.ReasonSucceeded + " " + polykubev1alpha1.ClusterIdentifiedCondition)
	}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Equal(1), "events: %v", fx.Events())
	g.Expect(fx.CountEvents("Warning "+polykubev1alpha1.ReasonClusterMemberMissing+" "+polykubev1alpha1.ClusterIdentifiedCondition)).To(Equal(1), "events: %v", fx.Events())
}

// TestReconciler_ClusterMember_LocalFlagFollowsClusterName checks that status.local moves when
// the operator restarts with another --cluster-name, and that nothing else marks a member local.
func TestReconciler_ClusterMember_LocalFlagFollowsClusterName(t *testing.T) {
	cfgCheck := func(t *testing.T, c client.Client, want map[string]bool) {
		t.Helper()
		NewWithT(t).Eventually(func(g Gomega) {
			for name, local := range want {
				m := &polykubev1alpha1.ClusterMember{}
				g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, m)).To(Succeed())
				g.Expect(m.Status.ObservedGeneration).To(Equal(m.Generation))
				g.Expect(m.Status.Local).To(Equal(local), "ClusterMember %s", name)
			}
		}).WithTimeout(waitTimeout).WithPolling(waitInterval).Should(Succeed())
	}

	t.Run("first operator", func(t *testing.T) {
		c, _ := startReconcilers(t, "flag-a")
		for _, m := range []*polykubev1alpha1.ClusterMember{newMember("flag-a", 101, "10.101.0.0/16"), newMember("flag-b", 102, "10.102.0.0/16")} {
			// Created here, deleted by the parent test: the second operator sees the same objects.
			if err := c.Create(context.Background(), m); err != nil {
				t.Fatal(err)
			}
		}
		cfgCheck(t, c, map[string]bool{"flag-a": true, "flag-b": false})
	})
	t.Run("operator restarted as the other cluster", func(t *testing.T) {
		c, _ := startReconcilers(t, "flag-b")
		t.Cleanup(func() {
			for _, name := range []string{"flag-a", "flag-b"} {
				_ = c.Delete(context.Background(), &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: name}})
			}
		})
		cfgCheck(t, c, map[string]bool{"flag-a": false, "flag-b": true})
	})
}

func TestReconciler_SetupWithManager_RequiresClusterName(t *testing.T) {
	g := NewWithT(t)
	err := (&Reconciler{}).SetupWithManager(nil)
	g.Expect(err).To(MatchError(ContainSubstring("--cluster-name")))
}

// withOverlay puts m on a netmaker (WireGuard) overlay reached at endpoint.
func withOverlay(m *polykubev1alpha1.ClusterMember, endpoint string) *polykubev1alpha1.ClusterMember {
	m.Spec.Network = polykubev1alpha1.NetworkOverlay{Type: "netmaker", Endpoint: endpoint}
	return m
}
