package soak

import (
	"strings"
	"testing"
	"time"

	"github.com/polykube/polykube/placement"

	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/topology"
)

func testTopology() *topology.Topology {
	return &topology.Topology{Name: "soak", Provider: topology.ProviderKwok, Clusters: []topology.Cluster{
		{Name: "alpha", Provider: "kwok", ClusterID: 1}, {Name: "beta", Provider: "kwok", ClusterID: 2}, {Name: "gamma", Provider: "kwok", ClusterID: 3},
	}}
}

func TestWalk_SameSeedSameSteps(t *testing.T) {
	clusters := []string{"alpha", "beta", "gamma"}
	a := NewWalk(42, clusters, Faults, 20*time.Second)
	b := NewWalk(42, clusters, Faults, 20*time.Second)
	c := NewWalk(43, clusters, Faults, 20*time.Second)
	differs := false
	kinds := map[Kind]int{}
	for i := 0; i < 200; i++ {
		sa, sb, sc := a.Next(), b.Next(), c.Next()
		if sa.String() != sb.String() {
			t.Fatalf("step %d differs for one seed: %q vs %q", i+1, sa, sb)
		}
		differs = differs || sa.String() != sc.String()
		kinds[sa.Kind]++
		if sa.Hold < 0 || sa.Hold > 20*time.Second {
			t.Errorf("%s: hold outside 0..20s", sa)
		}
		if sa.Kind == StepFault && (sa.Fault == testbed.FaultGit) != (sa.Cluster == "") {
			t.Errorf("%s: the git fault names no cluster, every other one does", sa)
		}
		if sa.Kind == StepFault && sa.Fault == testbed.FaultGit && sa.Edit != nil {
			t.Errorf("%s: an edit cannot be committed while Git is down", sa)
		}
	}
	if !differs {
		t.Error("seeds 42 and 43 drew the same 200 steps")
	}
	for _, k := range []Kind{StepFault, StepScale, StepRelabel, StepSecretDelete} {
		if kinds[k] == 0 {
			t.Errorf("200 steps drew no %s step", k)
		}
	}
}

func TestFleet_RelabelNeverEmptiesTheGroup(t *testing.T) {
	f := NewFleet(testTopology())
	if n, ok, _ := f.Allocation(SelectedName, "gamma"); ok || n != 0 {
		t.Fatalf("gamma starts outside the group, got %d, %v", n, ok)
	}
	if !f.Apply(Step{Kind: StepRelabel, Cluster: "alpha"}) {
		t.Fatal("relabelling alpha out of a group of two changed nothing")
	}
	if f.Apply(Step{Kind: StepRelabel, Cluster: "beta"}) {
		t.Fatal("relabelling the last member out of the group was applied")
	}
	if n, ok, _ := f.Allocation(SelectedName, "beta"); !ok || n != 2 {
		t.Fatalf("beta, alone in the group, want 2 replicas, got %d, %v", n, ok)
	}
	files, err := f.Files()
	if err != nil {
		t.Fatal(err)
	}
	if roster := string(files["roster/roster.yaml"]); !strings.Contains(roster, GroupLabel+": out") || !strings.Contains(roster, GroupLabel+": in") {
		t.Fatalf("the roster does not carry the group labels:\n%s", roster)
	}
}

// fleetObs observes every cluster running what f allocates, with the given UIDs and templates.
func fleetObs(t *testing.T, f *Fleet, uid func(c, w string) string) []Observation {
	t.Helper()
	var out []Observation
	for _, c := range []string{"alpha", "beta", "gamma"} {
		o := Observation{Cluster: c, Reachable: true, Deployments: map[string]DeploymentSeen{}, Workloads: map[string]WorkloadSeen{},
			Bindings: map[string]WorkloadSeen{SecretName: {Generation: 1, ObservedGeneration: 1, Ready: true}}}
		for _, w := range Workloads {
			n, ok, err := f.Allocation(w, c)
			if err != nil {
				t.Fatal(err)
			}
			if ok {
				o.Deployments[w] = DeploymentSeen{UID: uid(c, w), Replicas: n, Template: "t-" + w}
			}
			targets, err := f.allocations(w)
			if err != nil {
				t.Fatal(err)
			}
			o.Workloads[w] = WorkloadSeen{Generation: 1, ObservedGeneration: 1, Ready: true, SpecHash: placement.SpecHash(f.Workload(w).Spec), Allocation: AllocationKey(targets)}
		}
		out = append(out, o)
	}
	return out
}

func sameUID(c, w string) string { return c + "/" + w }

func invariants(vs []Violation) []string {
	var out []string
	for _, v := range vs {
		out = append(out, v.Invariant+" "+v.Cluster+"/"+v.Workload)
	}
	return out
}

func TestTracker(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(f *Fleet, tr *Tracker)
		see   func(obs []Observation)
		want  []string
		ready bool
	}{{
		name: "nothing moves", see: func([]Observation) {}, ready: true,
	}, {
		name: "a deleted Deployment of a targeted Workload",
		see:  func(obs []Observation) { delete(obs[0].Deployments, StaticName) },
		want: []string{InvDeploymentKept + " alpha/" + StaticName},
	}, {
		name: "a replaced Deployment",
		see: func(obs []Observation) {
			d := obs[1].Deployments[WeightedName]
			d.UID = "new"
			obs[1].Deployments[WeightedName] = d
		},
		want: []string{InvDeploymentKept + " beta/" + WeightedName},
	}, {
		name: "an unreachable cluster is no deletion",
		see:  func(obs []Observation) { obs[0] = Observation{Cluster: "alpha"} },
	}, {
		name: "a Deployment that is no target any more may go",
		edit: func(f *Fleet, tr *Tracker) {
			f.Apply(Step{Kind: StepRelabel, Cluster: "alpha"})
			_ = tr.Desire(f)
		},
		see:   func(obs []Observation) { delete(obs[0].Deployments, SelectedName) },
		ready: true,
	}, {
		name: "a rolled template",
		see: func(obs []Observation) {
			d := obs[2].Deployments[BoundName]
			d.Template = "other"
			obs[2].Deployments[BoundName] = d
		},
		want: []string{InvTemplateKept + " gamma/" + BoundName},
	}, {
		name: "below the floor",
		see: func(obs []Observation) {
			d := obs[0].Deployments[WeightedName]
			d.Replicas--
			obs[0].Deployments[WeightedName] = d
		},
		want: []string{InvReplicaFloor + " alpha/" + WeightedName},
	}, {
		name: "a scale down lowers the floor",
		edit: func(f *Fleet, tr *Tracker) {
			f.Apply(Step{Kind: StepScale, Total: 3})
			_ = tr.Desire(f)
		},
		see: func(obs []Observation) {
			d := obs[0].Deployments[WeightedName]
			d.Replicas = 1
			obs[0].Deployments[WeightedName] = d
		},
		ready: true,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFleet(testTopology())
			tr := NewTracker([]string{"alpha", "beta", "gamma"})
			if err := tr.Settle(f, fleetObs(t, f, sameUID)); err != nil {
				t.Fatal(err)
			}
			if tc.edit != nil {
				tc.edit(f, tr)
			}
			before := fleetObs(t, NewFleet(testTopology()), sameUID)
			tc.see(before)
			got := invariants(tr.Observe(1, before))
			if strings.Join(got, ",") != strings.Join(tc.want, ",") {
				t.Fatalf("violations %v, want %v", got, tc.want)
			}
			if tc.ready {
				why, err := tr.Converged(f, fleetObs(t, f, sameUID))
				if err != nil || why != "" {
					t.Fatalf("the desired state itself is not converged: %q, %v", why, err)
				}
			}
		})
	}
}

func TestTracker_ConvergedSaysWhatIsMissing(t *testing.T) {
	f := NewFleet(testTopology())
	tr := NewTracker([]string{"alpha", "beta", "gamma"})
	obs := fleetObs(t, f, sameUID)
	_ = tr.Settle(f, obs)
	obs[1].Workloads[StaticName] = WorkloadSeen{Generation: 2, ObservedGeneration: 1}
	obs[0].Bindings[SecretName] = WorkloadSeen{Generation: 1, ObservedGeneration: 1, Reason: "SecretNotFound"}
	obs[2] = Observation{Cluster: "gamma"}
	obs[1].Workloads[WeightedName] = WorkloadSeen{Generation: 1, ObservedGeneration: 1, Ready: true, SpecHash: "older"}
	stale := obs[0].Workloads[SelectedName]
	stale.Allocation = AllocationKey(map[string]int32{"alpha": 2})
	obs[0].Workloads[SelectedName] = stale
	why, err := tr.Converged(f, obs)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"gamma unreachable", "beta: Workload " + StaticName + " observed generation 1 of 2",
		"beta: Workload " + WeightedName + " runs spec older",
		"alpha: Workload " + SelectedName + " reports the allocation " + AllocationKey(map[string]int32{"alpha": 2}) + ", not the committed roster's map[alpha:2 beta:2]",
		"alpha: DatastoreBinding " + SecretName + " not Ready (SecretNotFound"} {
		if !strings.Contains(why, want) {
			t.Errorf("Converged says %q, missing %q", why, want)
		}
	}
}
