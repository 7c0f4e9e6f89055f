package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// AllocationDigest is a short, order-independent digest of an allocation: the first 16
// hexadecimal digits of the SHA-256 of one line per target, "cluster=replicas", sorted by
// cluster (decision 0013). Two clusters that computed the same replicas for the same targets
// give the same digest whatever order their targets were resolved in, so a Workload's status can
// carry the digest instead of every target's share, and polykube-status can compare it with the
// allocation it computes itself, or with the digest of a full list an earlier operator wrote.
// An empty allocation has a digest too (that of no line). A target listed twice counts once,
// with its last entry, as a status list keyed by cluster would keep it.
func AllocationDigest(a Allocation) string {
	byCluster := make(map[string]int32, len(a))
	for _, s := range a {
		byCluster[s.Cluster] = s.Replicas
	}
	clusters := make([]string, 0, len(byCluster))
	for c := range byCluster {
		clusters = append(clusters, c)
	}
	slices.Sort(clusters)
	var b strings.Builder
	b.Grow(len(clusters) * 40)
	for _, c := range clusters {
		b.WriteString(c)
		b.WriteByte('=')
		b.WriteString(strconv.FormatInt(int64(byCluster[c]), 10))
		b.WriteByte('\n')
	}
	sum := sha256.Sum256([]byte(b.String()))
	return hex.EncodeToString(sum[:8])
}

// TargetsWithReplicas counts the targets of an allocation with replicas above 0.
func (a Allocation) TargetsWithReplicas() int {
	n := 0
	for _, s := range a {
		if s.Replicas > 0 {
			n++
		}
	}
	return n
}

// ReportedAllocation is the digest and the count of targets of the allocation a Workload's
// status reports, in either layout: the full list of targets an operator before decision 0013
// wrote (status.targets, digested here) or the digest a later one writes (status.allocation).
// ok is false when the status reports no allocation. Readers of a fleet in the middle of an
// upgrade (polykube-status, the scenarios, the soak) compare copies through it.
func ReportedAllocation(st *polykubev1alpha1.WorkloadStatus) (digest string, targets int, ok bool) {
	if len(st.Targets) > 0 {
		alloc := make(Allocation, 0, len(st.Targets))
		for _, t := range st.Targets {
			alloc = append(alloc, Share{Cluster: t.Cluster, Replicas: t.DesiredReplicas})
		}
		return AllocationDigest(alloc), len(st.Targets), true
	}
	if a := st.Allocation; a != nil {
		return a.Digest, int(a.Targets), true
	}
	return "", 0, false
}
