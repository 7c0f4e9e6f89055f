package federation

import (
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

func member(name string, id int32, cidrs ...string) polykubev1alpha1.ClusterMember {
	return polykubev1alpha1.ClusterMember{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: polykubev1alpha1.ClusterMemberSpec{
			Provider: "kwok",
			Mesh:     polykubev1alpha1.ClusterMeshSettings{ClusterID: id, PodCIDRs: cidrs},
		},
	}
}

func roster(names ...string) polykubev1alpha1.FederationSpec {
	return polykubev1alpha1.FederationSpec{Members: names}
}

func members(ms ...polykubev1alpha1.ClusterMember) []polykubev1alpha1.ClusterMember { return ms }

// checkCase is one row of a check's table. wantInMessage lists substrings the message must
// contain, typically the names of the members at fault; notInMessage lists ones it must not.
type checkCase struct {
	name          string
	spec          polykubev1alpha1.FederationSpec
	members       []polykubev1alpha1.ClusterMember
	local         string
	wantStatus    metav1.ConditionStatus
	wantReason    string
	wantInMessage []string
	notInMessage  []string
}

func runCheckTable(t *testing.T, check Check, condType string, cases []checkCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			local := tc.local
			if local == "" {
				local = "a"
			}
			c := check(tc.spec, tc.members, local)
			g.Expect(c.Type).To(Equal(condType))
			g.Expect(c.Status).To(Equal(tc.wantStatus), c.Message)
			g.Expect(c.Reason).To(Equal(tc.wantReason), c.Message)
			g.Expect(c.Message).NotTo(BeEmpty())
			for _, s := range tc.wantInMessage {
				g.Expect(c.Message).To(ContainSubstring(s))
			}
			for _, s := range tc.notInMessage {
				g.Expect(c.Message).NotTo(ContainSubstring(s))
			}
		})
	}
}

func TestCheckClusterIdentified(t *testing.T) {
	runCheckTable(t, CheckClusterIdentified, polykubev1alpha1.ClusterIdentifiedCondition, []checkCase{
		{
			name: "own ClusterMember exists", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16"), member("b", 2, "10.2.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: []string{`"a"`},
		},
		{
			name: "own ClusterMember exists even though the roster does not list it", spec: roster("b"),
			members:    members(member("a", 1, "10.1.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "own ClusterMember missing", spec: roster("a", "b"),
			members:    members(member("b", 2, "10.2.0.0/16")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonClusterMemberMissing,
			wantInMessage: []string{`"a"`, "--cluster-name"},
		},
		{
			name: "no ClusterMembers at all", spec: roster("a"), local: "x",
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonClusterMemberMissing,
			wantInMessage: []string{`"x"`},
		},
	})
}

func TestCheckLocalMemberListed(t *testing.T) {
	runCheckTable(t, CheckLocalMemberListed, polykubev1alpha1.LocalMemberListedCondition, []checkCase{
		{
			name: "listed", spec: roster("b", "a"),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "not listed, though its ClusterMember exists", spec: roster("b", "c"),
			members:    members(member("a", 1, "10.1.0.0/16")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonLocalMemberMissing,
			wantInMessage: []string{`"a"`, "[b, c]"},
		},
		{
			name: "a prefix of a listed name does not count", spec: roster("ab"),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonLocalMemberMissing,
		},
	})
}

func TestCheckMembersPresent(t *testing.T) {
	runCheckTable(t, CheckMembersPresent, polykubev1alpha1.MembersPresentCondition, []checkCase{
		{
			name: "all present, extra ClusterMembers ignored", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16"), member("b", 2, "10.2.0.0/16"), member("z", 2, "10.2.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: []string{"2 members"},
		},
		{
			name: "one missing", spec: roster("a", "b", "c"),
			members:    members(member("a", 1, "10.1.0.0/16"), member("c", 3, "10.3.0.0/16")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonMemberMissing,
			wantInMessage: []string{"1 of 3", ": b;"}, notInMessage: []string{"a,", "c,"},
		},
		{
			name: "all missing", spec: roster("a", "b"),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonMemberMissing,
			wantInMessage: []string{"2 of 2", "a, b"},
		},
	})
}

func TestCheckClusterNamesValid(t *testing.T) {
	long := strings.Repeat("x", 33)
	runCheckTable(t, CheckClusterNamesValid, polykubev1alpha1.ClusterNamesValidCondition, []checkCase{
		{
			name: "valid, exactly 32 characters", spec: roster("a", strings.Repeat("y", 32)),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "33 characters", spec: roster("a", long),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonInvalidClusterName,
			wantInMessage: []string{long, "33 characters", "at most 32"},
		},
		{
			name: "not a DNS label", spec: roster("a", "Bad_Name", "-b"),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonInvalidClusterName,
			wantInMessage: []string{`"Bad_Name"`, `"-b"`, "DNS label"}, notInMessage: []string{`"a"`},
		},
	})
}

func TestCheckClusterIDsValid(t *testing.T) {
	runCheckTable(t, CheckClusterIDsValid, polykubev1alpha1.ClusterIDsValidCondition, []checkCase{
		{
			name: "unique and in range", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16"), member("b", 255, "10.2.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: []string{"1..255"},
		},
		{
			name: "duplicate", spec: roster("a", "b", "c"),
			members:    members(member("a", 7, "10.1.0.0/16"), member("b", 2, "10.2.0.0/16"), member("c", 7, "10.3.0.0/16")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonDuplicateClusterID,
			wantInMessage: []string{"a and c share cluster ID 7"}, notInMessage: []string{"b "},
		},
		{
			name: "duplicate with a ClusterMember outside the roster is fine", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16"), member("b", 2, "10.2.0.0/16"), member("other", 1, "10.9.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "above the default 255", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16"), member("b", 300, "10.2.0.0/16")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonClusterIDOutOfRange,
			wantInMessage: []string{"1..255", "b has 300", "511"},
		},
		{
			name:       "above 255 is fine with maxConnectedClusters 511",
			spec:       polykubev1alpha1.FederationSpec{Members: []string{"a", "b"}, Mesh: polykubev1alpha1.FederationMesh{MaxConnectedClusters: 511}},
			members:    members(member("a", 1, "10.1.0.0/16"), member("b", 511, "10.2.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: []string{"1..511"},
		},
		{
			name: "zero is out of range", spec: roster("a"),
			members:    members(member("a", 0, "10.1.0.0/16")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonClusterIDOutOfRange,
			wantInMessage: []string{"a has 0"},
		},
		{
			name: "duplicate and out of range: duplicate is the reason, both are told", spec: roster("a", "b", "c"),
			members:    members(member("a", 3, "10.1.0.0/16"), member("b", 3, "10.2.0.0/16"), member("c", 256, "10.3.0.0/16")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonDuplicateClusterID,
			wantInMessage: []string{"a and b share cluster ID 3", "c has 256"},
		},
		{
			name: "missing members are not checked", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: []string{"1 present"},
		},
	})
}

func TestCheckPodCIDRsDisjoint(t *testing.T) {
	runCheckTable(t, CheckPodCIDRsDisjoint, polykubev1alpha1.PodCIDRsDisjointCondition, []checkCase{
		{
			name: "disjoint, dual stack", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16", "fd00:1::/56"), member("b", 2, "10.2.0.0/16", "fd00:2::/56")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: []string{"4 pod CIDRs"},
		},
		{
			name: "adjacent is not overlapping", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.0.0.0/17"), member("b", 2, "10.0.128.0/17")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "one contains the other", spec: roster("a", "b", "c"),
			members:    members(member("a", 1, "10.0.0.0/16"), member("b", 2, "10.3.0.0/16"), member("c", 3, "10.0.128.0/17")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonPodCIDROverlap,
			wantInMessage: []string{"a (10.0.0.0/16) and c (10.0.128.0/17)"}, notInMessage: []string{"b ("},
		},
		{
			name: "identical IPv6", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16", "fd00::/48"), member("b", 2, "10.2.0.0/16", "fd00::/48")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonPodCIDROverlap,
			wantInMessage: []string{"a (fd00::/48) and b (fd00::/48)"},
		},
		{
			name: "unmasked address bits still overlap", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.2.3/16"), member("b", 2, "10.1.200.0/24")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonPodCIDROverlap,
			wantInMessage: []string{"a (10.1.2.3/16) and b (10.1.200.0/24)"},
		},
		{
			name: "overlap within one member is not this check's concern", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16", "10.1.0.0/24"), member("b", 2, "10.2.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "overlap with a ClusterMember outside the roster is fine", spec: roster("a"),
			members:    members(member("a", 1, "10.1.0.0/16"), member("other", 2, "10.1.0.0/16")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "not a CIDR", spec: roster("a", "b"),
			members:    members(member("a", 1, "10.1.0.0/16"), member("b", 2, "10.2.0.0")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonInvalidSpec,
			wantInMessage: []string{`b has "10.2.0.0"`},
		},
	})
}

func TestSummarize(t *testing.T) {
	ok := func(typ string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionTrue, Reason: polykubev1alpha1.ReasonSucceeded, Message: "fine"}
	}
	bad := func(typ, reason, msg string) metav1.Condition {
		return metav1.Condition{Type: typ, Status: metav1.ConditionFalse, Reason: reason, Message: msg}
	}
	tests := []struct {
		name          string
		in            []metav1.Condition
		wantStatus    metav1.ConditionStatus
		wantReason    string
		wantInMessage []string
	}{
		{
			name:       "all true",
			in:         []metav1.Condition{ok("A"), ok("B")},
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name:       "first failure gives the reason, every failure is told",
			in:         []metav1.Condition{ok("A"), bad("B", "R1", "one"), bad("C", "R2", "two")},
			wantStatus: metav1.ConditionFalse, wantReason: "R1",
			wantInMessage: []string{"B: one", "C: two"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			g := NewWithT(t)
			c := Summarize(tc.in)
			g.Expect(c.Type).To(Equal(polykubev1alpha1.ReadyCondition))
			g.Expect(c.Status).To(Equal(tc.wantStatus))
			g.Expect(c.Reason).To(Equal(tc.wantReason))
			for _, s := range tc.wantInMessage {
				g.Expect(c.Message).To(ContainSubstring(s))
			}
		})
	}
}

func TestMemberStatuses(t *testing.T) {
	g := NewWithT(t)
	got := MemberStatuses(roster("b", "a", "c"), members(member("a", 1, "10.1.0.0/16"), member("b", 2, "10.2.0.0/16")), "a")
	g.Expect(got).To(Equal([]polykubev1alpha1.FederationMemberStatus{
		{Name: "b", Present: true, ClusterID: 2},
		{Name: "a", Present: true, Local: true, ClusterID: 1},
		{Name: "c"},
	}))
}

func TestMaxConnectedClusters(t *testing.T) {
	g := NewWithT(t)
	g.Expect(MaxConnectedClusters(roster("a"))).To(Equal(int32(255)))
	g.Expect(MaxConnectedClusters(polykubev1alpha1.FederationSpec{Mesh: polykubev1alpha1.FederationMesh{MaxConnectedClusters: 511}})).To(Equal(int32(511)))
}

func TestJoinBounded(t *testing.T) {
	g := NewWithT(t)
	var many []string
	for i := range 13 {
		many = append(many, fmt.Sprintf("m%d", i))
	}
	g.Expect(joinBounded([]string{"a", "b"})).To(Equal("a, b"))
	g.Expect(joinBounded(many)).To(Equal("m0, m1, m2, m3, m4, m5, m6, m7, m8, m9 and 3 more"))
	// Long items stop at maxListBytes; the first always shows.
	var long []string
	for i := range 20 {
		long = append(long, fmt.Sprintf("%02d%s", i, strings.Repeat("x", 98)))
	}
	g.Expect(joinBounded(long)).To(Equal(long[0] + ", " + long[1] + " and 18 more"))
	g.Expect(joinBounded([]string{strings.Repeat("y", 400)})).To(HaveLen(400))
	g.Expect(joinCounted([]string{"a", "b"}, 130305)).To(Equal("a, b and 130303 more"))
}

func TestGroupNames(t *testing.T) {
	g := NewWithT(t)
	g.Expect(groupNames([]string{"a", "b"})).To(Equal("a and b"))
	g.Expect(groupNames([]string{"a", "b", "c"})).To(Equal("a and b and c"))
	g.Expect(groupNames([]string{"a", "b", "c", "d", "e"})).To(Equal("a, b, c and 2 more"))
}

func TestIsTransition(t *testing.T) {
	cond := func(s metav1.ConditionStatus, reason string) metav1.Condition {
		return metav1.Condition{Type: "X", Status: s, Reason: reason}
	}
	tests := []struct {
		name     string
		previous []metav1.Condition
		next     metav1.Condition
		want     bool
	}{
		{"first seen, healthy", nil, cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded), false},
		{"first seen, failing", nil, cond(metav1.ConditionFalse, "Bad"), true},
		{"first seen, true with an informative reason", nil, cond(metav1.ConditionTrue, "NotTargeted"), true},
		{"unchanged", []metav1.Condition{cond(metav1.ConditionFalse, "Bad")}, cond(metav1.ConditionFalse, "Bad"), false},
		{"reason changed", []metav1.Condition{cond(metav1.ConditionFalse, "Bad")}, cond(metav1.ConditionFalse, "Worse"), true},
		{"recovered", []metav1.Condition{cond(metav1.ConditionFalse, "Bad")}, cond(metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded), true},
		{"other type does not count", []metav1.Condition{{Type: "Y", Status: metav1.ConditionFalse, Reason: "Bad"}}, cond(metav1.ConditionFalse, "Bad"), true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			NewWithT(t).Expect(isTransition(tc.previous, tc.next)).To(Equal(tc.want))
		})
	}
}

func TestMemberStatus(t *testing.T) {
	g := NewWithT(t)
	m := member("a", 1, "10.1.0.0/16")
	m.Generation = 4
	g.Expect(MemberStatus(&m, "a", "v0.2.0")).To(Equal(polykubev1alpha1.ClusterMemberStatus{ObservedGeneration: 4, Local: true, OperatorVersion: "v0.2.0"}))
	// A peer's version is not this operator's to report.
	g.Expect(MemberStatus(&m, "b", "v0.2.0")).To(Equal(polykubev1alpha1.ClusterMemberStatus{ObservedGeneration: 4, Local: false}))
}

func overlayMember(name string, id int32, cidr, typ, endpoint string) polykubev1alpha1.ClusterMember {
	m := member(name, id, cidr)
	m.Spec.Network = polykubev1alpha1.NetworkOverlay{Type: typ, Endpoint: endpoint}
	return m
}

func TestCheckOverlayEndpointsUnique(t *testing.T) {
	runCheckTable(t, CheckOverlayEndpointsUnique, polykubev1alpha1.OverlayEndpointsUniqueCondition, []checkCase{
		{
			name: "distinct endpoints", spec: roster("a", "b"),
			members: members(overlayMember("a", 1, "10.1.0.0/16", "netmaker", "198.51.100.1:51820"),
				overlayMember("b", 2, "10.2.0.0/16", "netmaker", "198.51.100.2:51820")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: []string{"2 present members"},
		},
		{
			name: "same host on other ports is fine", spec: roster("a", "b"),
			members: members(overlayMember("a", 1, "10.1.0.0/16", "netmaker", "gw.example.com:51820"),
				overlayMember("b", 2, "10.2.0.0/16", "netmaker", "gw.example.com:51821")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
		{
			name: "members without an overlay are not compared", spec: roster("a", "b"),
			members: members(overlayMember("a", 1, "10.1.0.0/16", "none", ""),
				overlayMember("b", 2, "10.2.0.0/16", "none", "")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded, wantInMessage: []string{"0 present members"},
		},
		{
			name: "same endpoint spelled differently", spec: roster("a", "b", "c"),
			members: members(overlayMember("a", 1, "10.1.0.0/16", "netmaker", "[2001:db8::1]:51820"),
				overlayMember("b", 2, "10.2.0.0/16", "netmaker", "198.51.100.2:51820"),
				overlayMember("c", 3, "10.3.0.0/16", "netmaker", "[2001:DB8:0::1]:51820")),
			wantStatus: metav1.ConditionFalse, wantReason: polykubev1alpha1.ReasonDuplicateEndpoint,
			wantInMessage: []string{"a and c share overlay endpoint [2001:db8::1]:51820", "spec.network.endpoint"},
		},
		{
			name: "a member outside the roster is ignored", spec: roster("a", "b"),
			members: members(overlayMember("a", 1, "10.1.0.0/16", "netmaker", "198.51.100.1:51820"),
				overlayMember("b", 2, "10.2.0.0/16", "netmaker", "198.51.100.2:51820"),
				overlayMember("x", 3, "10.3.0.0/16", "netmaker", "198.51.100.1:51820")),
			wantStatus: metav1.ConditionTrue, wantReason: polykubev1alpha1.ReasonSucceeded,
		},
	})
}
