package metrics

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Read from the cache at each scrape (see the package doc).
var (
	failoverActiveDesc = prometheus.NewDesc("polykube_workload_failover_active",
		"1 while this cluster absorbs a peer's deficit for the Workload (FailoverReady reason FailoverActive), else 0; only Workloads with failover.",
		[]string{"namespace", "workload"}, nil)
	failoverExtraDesc = prometheus.NewDesc("polykube_workload_failover_extra_replicas",
		"Replicas this cluster runs for its peers' deficits on top of its own share (status.failover.extraReplicas); only Workloads with failover.",
		[]string{"namespace", "workload"}, nil)
	rosterDesc = prometheus.NewDesc("polykube_roster_members",
		"ClusterMembers in this cluster's roster.", nil, nil)
	prerequisiteDesc = prometheus.NewDesc("polykube_mesh_prerequisite_failing",
		"1 when a Federation's check of what Cilium ClusterMesh requires is False (unique cluster IDs, names, disjoint pod CIDRs, members present, the local member listed and identified), else 0.",
		[]string{"federation", "condition"}, nil)
	identityDesc = prometheus.NewDesc("polykube_identity_refused",
		"1 when an operator started in this cluster as another member than the one it is pinned to and refused to run (ClusterMember OperatorIdentity=False), else 0.",
		[]string{"clustermember"}, nil)
	suspendedDesc = prometheus.NewDesc("polykube_suspended",
		"1 for each object whose spec.suspend is true: the operator changes nothing for it in this cluster.",
		[]string{"kind", "namespace", "name"}, nil)
	scrapeErrorDesc = prometheus.NewDesc("polykube_state_metrics_errors",
		"Kinds whose objects could not be read from the cache at this scrape (their series above are missing).",
		nil, nil)
)

// meshPrerequisites are the Federation conditions polykube_mesh_prerequisite_failing reports.
var meshPrerequisites = []string{
	polykubev1alpha1.ClusterIdentifiedCondition, polykubev1alpha1.MembersPresentCondition,
	polykubev1alpha1.ClusterIDsValidCondition, polykubev1alpha1.ClusterNamesValidCondition,
	polykubev1alpha1.PodCIDRsDisjointCondition, polykubev1alpha1.LocalMemberListedCondition,
	polykubev1alpha1.OverlayEndpointsUniqueCondition,
}

// fleetCollector reads the Polykube objects from the operator's cache when Prometheus scrapes.
type fleetCollector struct {
	reader atomic.Pointer[client.Reader]
}

var fleet = &fleetCollector{}

// ReadStateFrom makes the state metrics read from r, the manager's cached client. One process
// runs one operator; a later call (tests that start several) replaces the reader.
func ReadStateFrom(r client.Reader) { fleet.reader.Store(&r) }

func (c *fleetCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{failoverActiveDesc, failoverExtraDesc, rosterDesc, prerequisiteDesc,
		identityDesc, suspendedDesc, scrapeErrorDesc} {
		ch <- d
	}
}

func (c *fleetCollector) Collect(ch chan<- prometheus.Metric) {
	rp := c.reader.Load()
	if rp == nil {
		return
	}
	// The cache answers from memory; the bound only matters before it has synced.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, m := range collectState(ctx, *rp) {
		ch <- m
	}
}

// collectState computes the state metrics from the objects r holds.
func collectState(ctx context.Context, r client.Reader) []prometheus.Metric {
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		out = append(out, prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...))
	}
	b2f := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	// The cache's objects are read, not copied: nothing here modifies them.
	opt := client.UnsafeDisableDeepCopy
	failed := 0

	workloads := &polykubev1alpha1.WorkloadList{}
	if err := r.List(ctx, workloads, opt); err != nil {
		failed++
	}
	for i := range workloads.Items {
		w := &workloads.Items[i]
		if w.Spec.Suspend {
			gauge(suspendedDesc, 1, "Workload", w.Namespace, w.Name)
		}
		if w.Spec.Distribution.Failover == nil {
			continue
		}
		fr := meta.FindStatusCondition(w.Status.Conditions, polykubev1alpha1.FailoverReadyCondition)
		gauge(failoverActiveDesc, b2f(fr != nil && fr.Reason == polykubev1alpha1.ReasonFailoverActive), w.Namespace, w.Name)
		extra := int32(0)
		if w.Status.Failover != nil {
			extra = w.Status.Failover.ExtraReplicas
		}
		gauge(failoverExtraDesc, float64(extra), w.Namespace, w.Name)
	}

	endpoints := &polykubev1alpha1.ServiceEndpointList{}
	if err := r.List(ctx, endpoints, opt); err != nil {
		failed++
	}
	for i := range endpoints.Items {
		if se := &endpoints.Items[i]; se.Spec.Suspend {
			gauge(suspendedDesc, 1, "ServiceEndpoint", se.Namespace, se.Name)
		}
	}
	bindings := &polykubev1alpha1.DatastoreBindingList{}
	if err := r.List(ctx, bindings, opt); err != nil {
		failed++
	}
	for i := range bindings.Items {
		if b := &bindings.Items[i]; b.Spec.Suspend {
			gauge(suspendedDesc, 1, "DatastoreBinding", b.Namespace, b.Name)
		}
	}

	members := &polykubev1alpha1.ClusterMemberList{}
	if err := r.List(ctx, members, opt); err != nil {
		failed++
	} else {
		gauge(rosterDesc, float64(len(members.Items)))
	}
	for i := range members.Items {
		m := &members.Items[i]
		if c := meta.FindStatusCondition(m.Status.Conditions, polykubev1alpha1.OperatorIdentityCondition); c != nil {
			gauge(identityDesc, b2f(c.Status == metav1.ConditionFalse), m.Name)
		}
	}

	federations := &polykubev1alpha1.FederationList{}
	if err := r.List(ctx, federations, opt); err != nil {
		failed++
	}
	for i := range federations.Items {
		f := &federations.Items[i]
		for _, typ := range meshPrerequisites {
			if c := meta.FindStatusCondition(f.Status.Conditions, typ); c != nil {
				gauge(prerequisiteDesc, b2f(c.Status == metav1.ConditionFalse), f.Name, typ)
			}
		}
	}
	gauge(scrapeErrorDesc, float64(failed))
	return out
}
