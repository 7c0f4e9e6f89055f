package federation

import (
	"fmt"
	"net"
	"net/netip"
	"slices"
	"sort"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The checks below are pure functions of the roster: the Federation spec, the ClusterMembers
// that exist in this cluster and the operator's --cluster-name. Each returns one condition
// (without ObservedGeneration or LastTransitionTime, which the reconciler sets). They look only
// at ClusterMembers the roster names; other ClusterMembers belong to no concern of this Federation.

const (
	// maxClusterNameLength is Cilium ClusterMesh's limit on cluster.name.
	maxClusterNameLength = 32
	// defaultMaxConnectedClusters is Cilium's clustermesh.maxConnectedClusters default.
	defaultMaxConnectedClusters = 255
	// maxNamesInMessage bounds the names a condition message lists.
	maxNamesInMessage = 10
	// maxListBytes bounds the bytes of one list in a message (the first item always shows):
	// with the check's own words around at most two lists, a message, and the event note made
	// of it, stays under the Events API's 1 KiB even with 63-character names (the longest the
	// schema lets spec.members hold), and Ready, which repeats every failing check's message,
	// stays far under a condition's 32 KiB at 511 members.
	maxListBytes = 280
	// maxNamesInGroup bounds the names of one group of members that share a cluster ID or an
	// overlay endpoint.
	maxNamesInGroup = 3
)

// Check computes one condition from the roster.
type Check func(spec polykubev1alpha1.FederationSpec, members []polykubev1alpha1.ClusterMember, localCluster string) metav1.Condition

// Checks are the ClusterMesh prerequisites in the order the summary reports them.
var Checks = []Check{
	CheckClusterIdentified,
	CheckLocalMemberListed,
	CheckMembersPresent,
	CheckClusterNamesValid,
	CheckClusterIDsValid,
	CheckPodCIDRsDisjoint,
	CheckOverlayEndpointsUnique,
}

// CheckClusterIdentified is True when a ClusterMember named after this cluster exists.
func CheckClusterIdentified(_ polykubev1alpha1.FederationSpec, members []polykubev1alpha1.ClusterMember, localCluster string) metav1.Condition {
	if findMember(members, localCluster) == nil {
		return falseCondition(polykubev1alpha1.ClusterIdentifiedCondition, polykubev1alpha1.ReasonClusterMemberMissing,
			"no ClusterMember named %q (the operator's --cluster-name) exists in this cluster: commit its ClusterMember manifest to Git, or start the operator with the --cluster-name of an existing ClusterMember", localCluster)
	}
	return trueCondition(polykubev1alpha1.ClusterIdentifiedCondition,
		"this cluster is ClusterMember %q", localCluster)
}

// CheckLocalMemberListed is True when this cluster is in spec.members.
func CheckLocalMemberListed(spec polykubev1alpha1.FederationSpec, _ []polykubev1alpha1.ClusterMember, localCluster string) metav1.Condition {
	if !slices.Contains(spec.Members, localCluster) {
		return falseCondition(polykubev1alpha1.LocalMemberListedCondition, polykubev1alpha1.ReasonLocalMemberMissing,
			"this cluster %q (the operator's --cluster-name) is not in spec.members [%s]: add it to the roster, or start the operator with the right --cluster-name", localCluster, nameList(spec.Members))
	}
	return trueCondition(polykubev1alpha1.LocalMemberListedCondition,
		"this cluster %q is in spec.members", localCluster)
}

// CheckMembersPresent is True when every roster entry has a ClusterMember of the same name.
func CheckMembersPresent(spec polykubev1alpha1.FederationSpec, members []polykubev1alpha1.ClusterMember, _ string) metav1.Condition {
	var missing []string
	for _, name := range spec.Members {
		if findMember(members, name) == nil {
			missing = append(missing, name)
		}
	}
	if len(missing) > 0 {
		return falseCondition(polykubev1alpha1.MembersPresentCondition, polykubev1alpha1.ReasonMemberMissing,
			"%d of %d members have no ClusterMember in this cluster: %s; commit a ClusterMember manifest for each, or remove them from spec.members", len(missing), len(spec.Members), nameList(missing))
	}
	return trueCondition(polykubev1alpha1.MembersPresentCondition,
		"all %d members have a ClusterMember", len(spec.Members))
}

// CheckClusterNamesValid is True when every roster name is a DNS label of at most 32 characters.
func CheckClusterNamesValid(spec polykubev1alpha1.FederationSpec, _ []polykubev1alpha1.ClusterMember, _ string) metav1.Condition {
	var problems []string
	for _, name := range spec.Members {
		switch {
		case len(name) > maxClusterNameLength:
			problems = append(problems, fmt.Sprintf("%q has %d characters (at most %d)", name, len(name), maxClusterNameLength))
		case len(validation.IsDNS1123Label(name)) > 0:
			problems = append(problems, fmt.Sprintf("%q is not a DNS label (lowercase letters, digits and '-', starting and ending with a letter or digit)", name))
		}
	}
	if len(problems) > 0 {
		return falseCondition(polykubev1alpha1.ClusterNamesValidCondition, polykubev1alpha1.ReasonInvalidClusterName,
			"Cilium ClusterMesh rejects these cluster names: %s; rename the clusters in spec.members and their ClusterMembers", joinBounded(problems))
	}
	return trueCondition(polykubev1alpha1.ClusterNamesValidCondition,
		"all %d member names are DNS labels of at most %d characters", len(spec.Members), maxClusterNameLength)
}

// CheckClusterIDsValid is True when the present members' cluster IDs are unique and within
// 1..maxConnectedClusters. Duplicates are reported before out-of-range IDs.
func CheckClusterIDsValid(spec polykubev1alpha1.FederationSpec, members []polykubev1alpha1.ClusterMember, _ string) metav1.Condition {
	limit := MaxConnectedClusters(spec)
	byID := map[int32][]string{}
	var outOfRange []string
	for _, m := range rosterMembers(spec, members) {
		id := m.Spec.Mesh.ClusterID
		byID[id] = append(byID[id], m.Name)
		if id < 1 || id > limit {
			outOfRange = append(outOfRange, fmt.Sprintf("%s has %d", m.Name, id))
		}
	}
	var duplicates []string
	for _, id := range sortedIDs(byID) {
		if names := byID[id]; len(names) > 1 {
			duplicates = append(duplicates, fmt.Sprintf("%s share cluster ID %d", groupNames(names), id))
		}
	}
	rangeMsg := fmt.Sprintf("cluster IDs must be within 1..%d (spec.mesh.maxConnectedClusters): %s; change spec.mesh.clusterID of those ClusterMembers", limit, joinBounded(outOfRange))
	if limit < 511 {
		rangeMsg += ", or set spec.mesh.maxConnectedClusters to 511 (it must match Cilium's clustermesh.maxConnectedClusters)"
	}
	switch {
	case len(duplicates) > 0:
		msg := fmt.Sprintf("cluster IDs must be unique in the mesh: %s; give each ClusterMember its own spec.mesh.clusterID", joinBounded(duplicates))
		if len(outOfRange) > 0 {
			msg += "; also, " + rangeMsg
		}
		return falseCondition(polykubev1alpha1.ClusterIDsValidCondition, polykubev1alpha1.ReasonDuplicateClusterID, "%s", msg)
	case len(outOfRange) > 0:
		return falseCondition(polykubev1alpha1.ClusterIDsValidCondition, polykubev1alpha1.ReasonClusterIDOutOfRange, "%s", rangeMsg)
	}
	return trueCondition(polykubev1alpha1.ClusterIDsValidCondition,
		"the cluster IDs of the %d present members are unique and within 1..%d", len(rosterMembers(spec, members)), limit)
}

// CheckPodCIDRsDisjoint is True when no pod CIDR of a present member overlaps a pod CIDR of
// another member. A CIDR that does not parse makes the check False with reason InvalidSpec.
func CheckPodCIDRsDisjoint(spec polykubev1alpha1.FederationSpec, members []polykubev1alpha1.ClusterMember, _ string) metav1.Condition {
	type cidr struct {
		member string
		text   string
		prefix netip.Prefix
	}
	var all []cidr
	var invalid []string
	for _, m := range rosterMembers(spec, members) {
		for _, c := range m.Spec.Mesh.PodCIDRs {
			p, err := netip.ParsePrefix(c)
			if err != nil {
				invalid = append(invalid, fmt.Sprintf("%s has %q", m.Name, c))
				continue
			}
			all = append(all, cidr{member: m.Name, text: c, prefix: p.Masked()})
		}
	}
	if len(invalid) > 0 {
		return falseCondition(polykubev1alpha1.PodCIDRsDisjointCondition, polykubev1alpha1.ReasonInvalidSpec,
			"pod CIDRs that are not CIDRs: %s; fix spec.mesh.podCIDRs of those ClusterMembers", joinBounded(invalid))
	}
	// Every pair is counted; only the pairs a message can show are formatted (511 members on
	// one CIDR are 130,305 pairs).
	var overlaps []string
	pairs := 0
	for i := range all {
		for j := i + 1; j < len(all); j++ {
			a, b := all[i], all[j]
			if a.member != b.member && a.prefix.Overlaps(b.prefix) {
				if pairs < maxNamesInMessage {
					overlaps = append(overlaps, fmt.Sprintf("%s (%s) and %s (%s)", a.member, a.text, b.member, b.text))
				}
				pairs++
			}
		}
	}
	if pairs > 0 {
		return falseCondition(polykubev1alpha1.PodCIDRsDisjointCondition, polykubev1alpha1.ReasonPodCIDROverlap,
			"pod CIDRs of different members overlap: %s; give each ClusterMember pod CIDRs no other member uses", joinCounted(overlaps, pairs))
	}
	return trueCondition(polykubev1alpha1.PodCIDRsDisjointCondition,
		"the %d pod CIDRs of the present members do not overlap", len(all))
}

// CheckOverlayEndpointsUnique is True when no two present members on an overlay publish the
// same spec.network.endpoint. Each WireGuard peer is one endpoint; two members behind one
// endpoint would both receive the other's traffic, so the overlay cannot reach both. Endpoints
// are compared after normalising the host (case, IPv6 spelling), so "[2001:db8::1]:51820" and
// "[2001:DB8:0::1]:51820" are the same endpoint.
func CheckOverlayEndpointsUnique(spec polykubev1alpha1.FederationSpec, members []polykubev1alpha1.ClusterMember, _ string) metav1.Condition {
	byEndpoint := map[string][]string{}
	var order []string
	overlaid := 0
	for _, m := range rosterMembers(spec, members) {
		if m.Spec.Network.Type == "" || m.Spec.Network.Type == "none" || m.Spec.Network.Endpoint == "" {
			continue
		}
		overlaid++
		key := normalizeEndpoint(m.Spec.Network.Endpoint)
		if _, ok := byEndpoint[key]; !ok {
			order = append(order, key)
		}
		byEndpoint[key] = append(byEndpoint[key], m.Name)
	}
	var duplicates []string
	for _, key := range order {
		if names := byEndpoint[key]; len(names) > 1 {
			duplicates = append(duplicates, fmt.Sprintf("%s share overlay endpoint %s", groupNames(names), key))
		}
	}
	if len(duplicates) > 0 {
		return falseCondition(polykubev1alpha1.OverlayEndpointsUniqueCondition, polykubev1alpha1.ReasonDuplicateEndpoint,
			"%s; give each ClusterMember its own spec.network.endpoint (host:port of its own overlay gateway)", joinBounded(duplicates))
	}
	return trueCondition(polykubev1alpha1.OverlayEndpointsUniqueCondition,
		"the %d present members on an overlay have distinct endpoints", overlaid)
}

// normalizeEndpoint returns host:port with the host lower-cased and an IP address in its
// canonical form; an endpoint that does not split is compared as written.
func normalizeEndpoint(endpoint string) string {
	host, port, err := net.SplitHostPort(endpoint)
	if err != nil {
		return endpoint
	}
	host = strings.ToLower(host)
	if addr, err := netip.ParseAddr(host); err == nil {
		host = addr.Unmap().String()
	}
	return net.JoinHostPort(host, port)
}

// Summarize returns the Ready condition from the checks' conditions: True when all are True,
// otherwise False with the reason of the first failing check and every failing check's message.
func Summarize(checks []metav1.Condition) metav1.Condition {
	var failed []metav1.Condition
	for _, c := range checks {
		if c.Status != metav1.ConditionTrue {
			failed = append(failed, c)
		}
	}
	if len(failed) == 0 {
		return trueCondition(polykubev1alpha1.ReadyCondition,
			"this cluster meets every ClusterMesh prerequisite the roster can show")
	}
	msgs := make([]string, 0, len(failed))
	for _, c := range failed {
		msgs = append(msgs, fmt.Sprintf("%s: %s", c.Type, c.Message))
	}
	return metav1.Condition{
		Type:    polykubev1alpha1.ReadyCondition,
		Status:  metav1.ConditionFalse,
		Reason:  failed[0].Reason,
		Message: strings.Join(msgs, "; "),
	}
}

// MaxConnectedClusters is the spec's maxConnectedClusters, or Cilium's default 255 when unset.
func MaxConnectedClusters(spec polykubev1alpha1.FederationSpec) int32 {
	if spec.Mesh.MaxConnectedClusters == 0 {
		return defaultMaxConnectedClusters
	}
	return spec.Mesh.MaxConnectedClusters
}

// MemberStatuses lists every roster entry with what this cluster knows of it, in roster order.
func MemberStatuses(spec polykubev1alpha1.FederationSpec, members []polykubev1alpha1.ClusterMember, localCluster string) []polykubev1alpha1.FederationMemberStatus {
	out := make([]polykubev1alpha1.FederationMemberStatus, 0, len(spec.Members))
	for _, name := range spec.Members {
		s := polykubev1alpha1.FederationMemberStatus{Name: name, Local: name == localCluster}
		if m := findMember(members, name); m != nil {
			s.Present = true
			s.ClusterID = m.Spec.Mesh.ClusterID
		}
		out = append(out, s)
	}
	return out
}

// rosterMembers returns the ClusterMembers the roster names, in roster order. A name listed
// twice (the API server rejects that) counts once.
func rosterMembers(spec polykubev1alpha1.FederationSpec, members []polykubev1alpha1.ClusterMember) []*polykubev1alpha1.ClusterMember {
	seen := map[string]bool{}
	var out []*polykubev1alpha1.ClusterMember
	for _, name := range spec.Members {
		if seen[name] {
			continue
		}
		seen[name] = true
		if m := findMember(members, name); m != nil {
			out = append(out, m)
		}
	}
	return out
}

func findMember(members []polykubev1alpha1.ClusterMember, name string) *polykubev1alpha1.ClusterMember {
	for i := range members {
		if members[i].Name == name {
			return &members[i]
		}
	}
	return nil
}

func sortedIDs(m map[int32][]string) []int32 {
	ids := make([]int32, 0, len(m))
	for id := range m {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	return ids
}

// nameList joins names, listing at most maxNamesInMessage of them.
func nameList(names []string) string { return joinBounded(names) }

// joinBounded joins items with ", ", listing at most maxNamesInMessage within maxListBytes and
// counting the rest, so that a roster of hundreds of clusters keeps condition messages readable
// and bounded.
func joinBounded(items []string) string { return joinCounted(items, len(items)) }

// joinCounted is joinBounded for the first items of n in all (the rest were not formatted).
func joinCounted(items []string, n int) string {
	var b strings.Builder
	shown := 0
	for _, it := range items {
		if shown == maxNamesInMessage || (shown > 0 && b.Len()+len(", ")+len(it) > maxListBytes) {
			break
		}
		if shown > 0 {
			b.WriteString(", ")
		}
		b.WriteString(it)
		shown++
	}
	if n > shown {
		fmt.Fprintf(&b, " and %d more", n-shown)
	}
	return b.String()
}

// groupNames names the members of one group ("a and b", "a, b, c and 7 more").
func groupNames(names []string) string {
	if len(names) <= maxNamesInGroup {
		return strings.Join(names, " and ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:maxNamesInGroup], ", "), len(names)-maxNamesInGroup)
}

func trueCondition(condType, format string, args ...any) metav1.Condition {
	return metav1.Condition{
		Type:    condType,
		Status:  metav1.ConditionTrue,
		Reason:  polykubev1alpha1.ReasonSucceeded,
		Message: fmt.Sprintf(format, args...),
	}
}

func falseCondition(condType, reason, format string, args ...any) metav1.Condition {
	return metav1.Condition{
		Type:    condType,
		Status:  metav1.ConditionFalse,
		Reason:  reason,
		Message: fmt.Sprintf(format, args...),
	}
}
