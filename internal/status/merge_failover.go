package status

import (
	"fmt"
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
