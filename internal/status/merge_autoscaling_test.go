package status

import (
	"bytes"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// autoscaledFleet is the healthy fleet plus shop/api, autoscaled between 3 and 12 over alpha,
// beta and gamma (1..4 each), every operator's status written with the bounds and its slice
// at current replicas (all ready).
func autoscaledFleet(current map[string]int32) []Snapshot {
	api := weighted("shop", "api", 0, fleetClusters...)
	api.Spec.Distribution.Replicas = nil
	api.Spec.Autoscaling = &polykubev1alpha1.Autoscaling{MinReplicas: ptr.To[int32](3), MaxReplicas: ptr.To[int32](12)}
	snaps := healthyFleet()
	for i, c := range fleetClusters {
		snaps[i].Workloads = append(snaps[i].Workloads, operatedAutoscaled(api, c, current[c]))
		snaps[i].Deployments = append(snaps[i].Deployments, deployment("shop", "api", current[c]))
	}
	return snaps
}

// operatedAutoscaled is the status the operator of cluster writes for an autoscaled Workload
// whose HPA scaled it to current, all ready.
func operatedAutoscaled(w polykubev1alpha1.Workload, cluster string, current int32) polykubev1alpha1.Workload {
	w = *w.DeepCopy()
	bounds, _, err := placement.BoundsForWorkloadIn(&w, nil)
	if err != nil {
		panic(err)
	}
	w = withStatus(w, cluster, bounds.Floors(), "hash-api")
	here, _ := bounds.For(cluster)
	w.Status.DesiredReplicas, w.Status.ReadyReplicas = current, current
	w.Status.Autoscaling = &polykubev1alpha1.AutoscalingStatus{MinReplicas: here.Min, MaxReplicas: here.Max, CurrentReplicas: current}
	for i := range w.Status.Targets {
		b, _ := bounds.For(w.Status.Targets[i].Cluster)
		w.Status.Targets[i].MinReplicas, w.Status.Targets[i].MaxReplicas = ptr.To(b.Min), ptr.To(b.Max)
		if w.Status.Targets[i].Local {
			w.Status.Targets[i].ReadyReplicas, w.Status.Targets[i].CurrentReplicas = ptr.To(current), ptr.To(current)
		}
	}
	return w
}

func apiRow(g Gomega, r Report) WorkloadRow {
	for _, w := range r.Workloads {
		if w.Name == "api" {
			return w
		}
	}
	g.Expect(false).To(BeTrue(), "no row for shop/api")
	return WorkloadRow{}
}

func TestMerge_Autoscaled_SumsCurrentReplicas(t *testing.T) {
	g := NewWithT(t)
	r := Merge(autoscaledFleet(map[string]int32{"alpha": 4, "beta": 1, "gamma": 2}), Query{Timeout: 5 * time.Second})
	g.Expect(r.Disagreements).To(BeEmpty(), "the copies agree; the HPAs' different replicas are no disagreement")
	g.Expect(r.Summary.Healthy).To(BeTrue())
	row := apiRow(g, r)
	g.Expect(row.Ready).To(BeTrue())
	g.Expect(row.DesiredTotal).To(BeEquivalentTo(7), "the current replicas, summed")
	g.Expect(row.ReadyTotal).To(BeEquivalentTo(7))
	g.Expect(row.Expected).To(Equal([]Share{{"alpha", 1}, {"beta", 1}, {"gamma", 1}}), "the floors")
	g.Expect(row.Clusters[0].Autoscaling).To(Equal(&Autoscaled{MinReplicas: 1, MaxReplicas: 4, CurrentReplicas: 4}))

	var out bytes.Buffer
	g.Expect(PrintReport(&out, r, FormatTable, ViewWorkloads, PrintOptions{})).To(Succeed())
	g.Expect(out.String()).To(ContainSubstring("4/4 (1..4) Ready"))
	g.Expect(out.String()).To(ContainSubstring("7/7"))
}

func TestMerge_Autoscaled_Readiness(t *testing.T) {
	tests := []struct {
		name     string
		mutate   func(w *polykubev1alpha1.Workload)
		notReady string // "" when ready
	}{
		{
			name: "scaling up: fewer ready than the HPA asked for, above the minimum",
			mutate: func(w *polykubev1alpha1.Workload) {
				w.Status.DesiredReplicas, w.Status.Autoscaling.CurrentReplicas, w.Status.ReadyReplicas = 4, 4, 2
				w.Status.Phase = polykubev1alpha1.PhaseProgressing
			},
		},
		{
			name: "below the minimum",
			mutate: func(w *polykubev1alpha1.Workload) {
				w.Status.ReadyReplicas, w.Status.Phase = 0, polykubev1alpha1.PhaseProgressing
			},
			notReady: "alpha: 0 ready, below its autoscaling minimum (1..4, currently 1), phase Progressing",
		},
		{
			name:     "degraded",
			mutate:   func(w *polykubev1alpha1.Workload) { w.Status.Phase = polykubev1alpha1.PhaseDegraded },
			notReady: "alpha: phase Degraded",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := NewWithT(t)
			snaps := autoscaledFleet(map[string]int32{"alpha": 1, "beta": 1, "gamma": 1})
			tt.mutate(findWorkload(&snaps[0], "api"))
			row := apiRow(g, Merge(snaps, Query{Timeout: 5 * time.Second}))
			if tt.notReady == "" {
				g.Expect(row.NotReady).To(BeEmpty())
				g.Expect(row.Ready).To(BeTrue())
				return
			}
			g.Expect(row.Ready).To(BeFalse())
			g.Expect(row.NotReady).To(ContainElement(tt.notReady))
		})
	}
}
