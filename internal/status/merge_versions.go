package status

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// The versions view: which operator version each cluster runs, and whether they differ.

// versions fills each reachable cluster row's OperatorVersion from the cluster's own
// ClusterMember and, while the versions differ, adds a VersionSkew notice naming which cluster
// runs which. Skew is normal during an upgrade (docs/upgrading.md), so it is a notice, never a
// disagreement: it does not change the exit code. It is a warning when two versions are more
// than one minor release apart, which the skew policy does not support.
func (m *merger) versions() {
	byVersion := map[string][]string{}
	for i, s := range m.snaps {
		if !m.reachable(i) {
			continue
		}
		v := localOperatorVersion(s, m.names[i])
		m.report.Clusters[i].OperatorVersion = v
		byVersion[v] = append(byVersion[v], m.names[i])
	}
	reported := 0
	for v := range byVersion {
		if v != "" {
			reported++
		}
	}
	if len(byVersion) < 2 || reported == 0 {
		return
	}
	var parts, clusters []string
	for _, v := range sortedVersions(byVersion) {
		names := uniqueSorted(byVersion[v])
		clusters = append(clusters, names...)
		label := v
		if v == "" {
			label = "no version reported"
		}
		parts = append(parts, fmt.Sprintf("%s (%s)", label, strings.Join(names, ", ")))
	}
	msg := "operators run different versions: %s; expected while an upgrade moves one cluster at a time; upgrade the others to end it (docs/upgrading.md)"
	if byVersion[""] != nil {
		msg += "; a cluster that reports no version runs an operator older than status.operatorVersion, or its operator has not started"
	}
	if tooFarApart(sortedVersions(byVersion)) {
		m.warn(NoticeVersionSkew, "Fleet", clusters,
			msg+"; versions more than one minor release apart may not run side by side: upgrade the oldest clusters first",
			strings.Join(parts, ", "))
		return
	}
	m.notice(NoticeVersionSkew, "Fleet", clusters, msg, strings.Join(parts, ", "))
}

// localOperatorVersion is status.operatorVersion of the snapshot's own ClusterMember: the one
// named like the cluster and reported local, else any reported local.
func localOperatorVersion(s Snapshot, cluster string) string {
	v := ""
	for _, cm := range s.ClusterMembers {
		if !cm.Status.Local {
			continue
		}
		if cm.Name == cluster {
			return cm.Status.OperatorVersion
		}
		if v == "" {
			v = cm.Status.OperatorVersion
		}
	}
	return v
}

// sortedVersions orders the versions oldest first where they parse as semver, then the rest
// by name, and "" (no version reported) last.
func sortedVersions(byVersion map[string][]string) []string {
	vs := sortedMapKeys(byVersion)
	sort.SliceStable(vs, func(i, j int) bool {
		a, aok := majorMinor(vs[i])
		b, bok := majorMinor(vs[j])
		switch {
		case vs[i] == "" || vs[j] == "":
			return vs[j] == "" && vs[i] != ""
		case aok && bok && a != b:
			return a[0] < b[0] || a[0] == b[0] && a[1] < b[1]
		case aok != bok:
			return aok
		}
		return false
	})
	return vs
}

// tooFarApart is true when two of the semver versions are more than one minor release apart
// (or of different majors): the skew policy supports N−1 and N only.
func tooFarApart(vs []string) bool {
	var mm [][2]int
	for _, v := range vs {
		if x, ok := majorMinor(v); ok {
			mm = append(mm, x)
		}
	}
	for _, a := range mm {
		for _, b := range mm {
			if a[0] != b[0] || a[1]-b[1] > 1 {
				return true
			}
		}
	}
	return false
}

// majorMinor parses the major and minor numbers of a "vX.Y.Z[-pre][+build]" version.
func majorMinor(v string) ([2]int, bool) {
	rest, ok := strings.CutPrefix(v, "v")
	if !ok {
		return [2]int{}, false
	}
	f := strings.SplitN(rest, ".", 3)
	if len(f) < 3 {
		return [2]int{}, false
	}
	major, err1 := strconv.Atoi(f[0])
	minor, err2 := strconv.Atoi(f[1])
	if err1 != nil || err2 != nil {
		return [2]int{}, false
	}
	return [2]int{major, minor}, true
}
