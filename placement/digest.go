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
	if !slices.IsSortedFunc(a, func(x, y Share) int { return strings.Compare(x.Cluster, y.Cluster) }) || hasDuplicate(a) {
		byCluster := make(map[string]int32, len(a))
		for _, s := range a {
			byCluster[s.Cluster] = s.Replicas
		}
		clusters := make([]string, 0, len(byCluster))
		for c := range byCluster {
			clusters = append(clusters, c)
		}
		slices.Sort(clusters)
		unique := make(Allocation, len(clusters))
		for i, c := range clusters {
			unique[i] = Share{Cluster: c, Replicas: byCluster[c]}
		}
		a = unique
	}
	// An allocation as Allocate returns it is sorted by cluster, each once: it is hashed as it
	// is, with no copy (this runs on every reconcile, over every target).
	buf := make([]byte, 0, len(a)*40)
	for _, s := range a {
		buf = append(buf, s.Cluster...)
		buf = append(buf, '=')
		buf = strconv.AppendInt(buf, int64(s.Replicas), 10)
		buf = append(buf, '\n')
	}
	sum := sha256.Sum256(buf)
	return hex.EncodeToString(sum[:8])
}

// hasDuplicate reports whether a sorted allocation lists a cluster twice.
func hasDuplicate(a Allocation) bool {
	for i := 1; i < len(a); i++ {
		if a[i].Cluster == a[i-1].Cluster {
			return true
		}
	}
	return false
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
