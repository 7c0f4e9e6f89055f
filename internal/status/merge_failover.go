package status

import (
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// Capacity failover (decision 0006): each operator runs its base share plus an extra for the
// peers its own view of the mesh shows short, and reports the view it acted on in
// status.failover.peers. Views may differ between clusters; that is not a disagreement. What
// must hold is that a cluster's effective replicas are placement.FailoverFor of the view it
// reports, and that is checked here. An active failover is a notice.

// FailoverView is one cluster's status.failover beside its recomputation.
type FailoverView struct {
	// BaseReplicas, ExtraReplicas and EffectiveReplicas are as the cluster reports them.
	BaseReplicas      int32 `json:"baseReplicas"`
	ExtraReplicas     int32 `json:"extraReplicas,omitempty"`
	EffectiveReplicas int32 `json:"effectiveReplicas"`
	// ExpectedReplicas is placement.FailoverFor of the copy's spec over the deficits the
	// cluster reports (its peers' absorbedReplicas) with the spec's maxSurge; unset when it
	// cannot be computed (the cluster is not a target, or the spec is invalid).
	ExpectedReplicas *int32 `json:"expectedReplicas,omitempty"`
	// Active is true when the cluster runs extra replicas for peers it sees short.
	Active bool `json:"active"`
	// Peers is status.failover.peers: the peers whose deficit it absorbs or is waiting on.
	Peers []PeerView `json:"peers,omitempty"`
}

// PeerView is what one cluster's failover remembers of a peer (status.failover.peers[]).
type PeerView struct {
	Cluster          string       `json:"cluster"`
	AbsorbedReplicas int32        `json:"absorbedReplicas,omitempty"`
	Since            *metav1.Time `json:"since,omitempty"`
	PendingReplicas  int32        `json:"pendingReplicas,omitempty"`
	PendingSince     *metav1.Time `json:"pendingSince,omitempty"`
}

// checkFailover recomputes the failover of the copy w in snapshot i from the view its status
// reports, records it in cell, flags effective replicas that do not follow from that view and
// notes an active failover.
func (m *merger) checkFailover(object string, i int, w *polykubev1alpha1.Workload, cell *WorkloadInCluster) {
	st := w.Status.Failover
	if st == nil || w.Spec.Distribution.Failover == nil || w.Status.Cluster == "" {
		return
	}
	name := m.names[i]
	view := &FailoverView{BaseReplicas: st.BaseReplicas, ExtraReplicas: st.ExtraReplicas, EffectiveReplicas: st.EffectiveReplicas}
	for _, p := range st.Peers {
		view.Peers = append(view.Peers, PeerView{Cluster: p.Cluster, AbsorbedReplicas: p.AbsorbedReplicas, Since: p.Since,
			PendingReplicas: p.PendingReplicas, PendingSince: p.PendingSince})
	}
	state := placement.FailoverStateFromStatus(st)
	view.Active = st.EffectiveReplicas > st.BaseReplicas && state.Active()
	cell.Failover = view
	if view.Active {
		m.notice(NoticeFailoverActive, object, []string{name}, "%s runs %d replicas, its base %d plus %d for %s: %s",
			name, st.EffectiveReplicas, st.BaseReplicas, st.EffectiveReplicas-st.BaseReplicas, absorbedList(st.Peers), pendingNote(st.Peers))
	}

	if w.Status.ObservedGeneration != w.Generation || !cell.Targeted {
		// A status behind its spec is reported as not ready; a cluster that is not a target runs nothing.
		return
	}
	cfg, _, err := placement.FailoverFromWorkload(w)
	if err != nil {
		m.flag(DisagreeInvalidSpec, object, []string{name}, "the copy in %s cannot fail over: %v; fix the manifest in Git", name, err)
		return
	}
	spec, err := placement.SpecFromWorkloadIn(w, m.snaps[i].ClusterMembers)
	if err != nil {
		// The allocation of the same spec and roster failed too, and is reported with it.
		return
	}
	f, err := placement.FailoverFor(spec, w.Status.Cluster, state.Deficits(), cfg.MaxSurge)
	if err != nil {
		return
	}
	view.ExpectedReplicas = &f.Replicas
	if f.Base == st.BaseReplicas && f.Extra == st.ExtraReplicas && f.Replicas == st.EffectiveReplicas {
		return
	}
	m.flag(DisagreeFailover, object, []string{name},
		"%s reports %d replicas (base %d + extra %d), but placement.FailoverFor over the deficits it reports (%s) with maxSurge %s gives %d (base %d + extra %d): the operator in %s computes failover differently (version skew?)",
		name, st.EffectiveReplicas, st.BaseReplicas, st.ExtraReplicas, deficitsList(st.Peers), cfg.MaxSurge, f.Replicas, f.Base, f.Extra, name)
}

// checkFailoverClaims holds each deficit a cluster absorbs against the peer's own report, and
// warns when every readable target absorbs at once. Neither is a disagreement: a partition
// over-provisions by design (decision 0006). But a peer that reports its replicas ready while
// another absorbs them says the absorbing cluster's view of the mesh misses it, and a fleet in
// which every cluster absorbs the others runs up to maxSurge over its total with no outage to
// explain it: the signature of operators that see no peer at all.
func (m *merger) checkFailoverClaims(object string, row *WorkloadRow) {
	own := map[string]WorkloadInCluster{}
	for _, cell := range row.Clusters {
		if cell.State == StatePresent && cell.ReportedCluster == cell.Cluster {
			own[cell.Cluster] = cell
		}
	}
	type claim struct {
		by, peer string
		absorbed int32
		peerCell WorkloadInCluster
		peerBase int32
	}
	var claims []claim
	var targets, absorbing []string
	// absorbs lists, per absorbing cluster, the peers it absorbs.
	absorbs := map[string][]string{}
	var total, running int32
	for _, cell := range row.Clusters {
		if cell.State != StatePresent || !cell.Targeted {
			continue
		}
		targets = append(targets, cell.Cluster)
		f := cell.Failover
		if f == nil {
			total += cell.Desired
			running += cell.Desired
			continue
		}
		total += f.BaseReplicas
		running += f.EffectiveReplicas
		if f.Active {
			absorbing = append(absorbing, cell.Cluster)
		}
		for _, p := range f.Peers {
			if p.AbsorbedReplicas > 0 && f.Active {
				absorbs[cell.Cluster] = append(absorbs[cell.Cluster], p.Cluster)
			}
			// A pending change means the cluster already sees the peer differently (it may be
			// serving again while the extra waits out returnAfter): nothing to check.
			peer, ok := own[p.Cluster]
			if p.AbsorbedReplicas <= 0 || p.PendingSince != nil || !ok || !peer.Targeted {
				continue
			}
			base := peer.Desired
			if peer.Failover != nil {
				base = peer.Failover.BaseReplicas
			}
			if peer.Ready > base-p.AbsorbedReplicas {
				claims = append(claims, claim{by: cell.Cluster, peer: p.Cluster, absorbed: p.AbsorbedReplicas, peerCell: peer, peerBase: base})
			}
		}
	}
	// A surge: every readable target absorbs, and each absorbs a peer that itself runs and
	// absorbs. Survivors of a real outage absorb only peers that are down (or unreadable here).
	mutual := len(targets) >= 2 && len(absorbing) == len(targets)
	for _, c := range absorbing {
		mutual = mutual && slices.ContainsFunc(absorbs[c], func(p string) bool { return slices.Contains(absorbing, p) })
	}
	if mutual {
		m.warn(NoticeFailoverSurge, object, absorbing,
			"every target absorbs its peers' share at once (%s): the fleet runs %d replicas for a total of %d. No outage explains it while each cluster reports its own slice; the operators do not see each other through the mesh: check ClusterMesh, that Cilium's cluster.name is each ClusterMember's name, and endpoint-slice synchronisation",
			strings.Join(absorbing, ", "), running, total)
		return
	}
	for _, c := range claims {
		m.warn(NoticeDeficitUnconfirmed, object, []string{c.by, c.peer},
			"%s absorbs %d for %s, but %s reports %d/%d ready itself: %s's view of the mesh misses %s's endpoints (a partition, Cilium's cluster.name differing from the ClusterMember name, or endpoint-slice synchronisation off?)",
			c.by, c.absorbed, c.peer, c.peer, c.peerCell.Ready, c.peerBase, c.by, c.peer)
	}
}

// warn records a notice of level warning.
func (m *merger) warn(kind, object string, clusters []string, format string, args ...any) {
	m.notice(kind, object, clusters, format, args...)
	m.report.Notices[len(m.report.Notices)-1].Level = LevelWarning
}

func (m *merger) notice(kind, object string, clusters []string, format string, args ...any) {
	m.report.Notices = append(m.report.Notices, Notice{
		Kind: kind, Object: object, Clusters: uniqueSorted(clusters), Message: fmt.Sprintf(format, args...),
	})
}

// absorbedList names the peers whose deficit is absorbed, with the deficit and since when.
func absorbedList(peers []polykubev1alpha1.PeerFailoverStatus) string {
	var parts []string
	for _, p := range peers {
		if p.AbsorbedReplicas <= 0 {
			continue
		}
		s := fmt.Sprintf("%s (missing %d", p.Cluster, p.AbsorbedReplicas)
		if p.Since != nil {
			s += " since " + p.Since.UTC().Format("2006-01-02T15:04:05Z")
		}
		parts = append(parts, s+")")
	}
	return strings.Join(parts, ", ")
}

// deficitsList is the view FailoverFor is given: every absorbed deficit, or "none".
func deficitsList(peers []polykubev1alpha1.PeerFailoverStatus) string {
	var parts []string
	for _, p := range peers {
		if p.AbsorbedReplicas > 0 {
			parts = append(parts, fmt.Sprintf("%s missing %d", p.Cluster, p.AbsorbedReplicas))
		}
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// pendingNote says what the hysteresis is waiting on, or that the extra stays until the peers
// have served their share again for returnAfter.
func pendingNote(peers []polykubev1alpha1.PeerFailoverStatus) string {
	var parts []string
	for _, p := range peers {
		if p.PendingSince == nil {
			continue
		}
		s := fmt.Sprintf("%s's deficit is to become %d", p.Cluster, p.PendingReplicas)
		parts = append(parts, s+" (seen since "+p.PendingSince.UTC().Format("2006-01-02T15:04:05Z")+")")
	}
	if len(parts) == 0 {
		return "the extra stays until those peers have served their share again for returnAfter (make-before-break)"
	}
	return strings.Join(parts, "; ")
}
