package placement

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strconv"
	"strings"
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
