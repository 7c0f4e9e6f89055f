package soak

import (
	"fmt"
	"slices"
	"strings"

	"github.com/polykube/polykube/placement"
)

// DeploymentSeen is what an observation saw of a Workload's Deployment in a cluster.
type DeploymentSeen struct {
	UID      string
	Replicas int32
	Template string // placement.TemplateHash of its pod template
}

// WorkloadSeen is what an observation saw of a Workload's status in a cluster.
type WorkloadSeen struct {
	Generation, ObservedGeneration int64
	Ready                          bool
	Reason, Message                string
	// SpecHash is the spec the operator last reconciled (status.specHash; Workloads only).
	SpecHash string
	// Allocation is the allocation the status reports (Workloads only): what the operator
	// computed from the roster it last saw, as allocationKey of its digest and count of targets
	// (placement.ReportedAllocation: status.allocation, or status.targets from an operator of
	// the previous release).
	Allocation string
}

// Observation is one read of one cluster; Reachable is false when the read failed (the
// cluster's API server stopped, say), and then nothing else is set.
type Observation struct {
	Cluster     string
	Reachable   bool
	Deployments map[string]DeploymentSeen // by Workload name; absent: no Deployment
	Workloads   map[string]WorkloadSeen
	// Bindings are the DatastoreBindings' statuses by name (their Ready condition).
	Bindings map[string]WorkloadSeen
}

// Violation is an invariant found broken, with the step it happened in.
type Violation struct {
	Step      int
	Invariant string
	Cluster   string
	Workload  string
	Detail    string
}

func (v Violation) String() string {
	return fmt.Sprintf("step %d: %s: %s/%s in %s: %s", v.Step, v.Invariant, Namespace, v.Workload, v.Cluster, v.Detail)
}

// The invariants, as violations name them.
const (
	InvDeploymentKept = "deployment-kept"  // a Deployment of a Workload that stayed targeted is never deleted or replaced
	InvTemplateKept   = "template-kept"    // an unchanged Workload's pods are never rolled
	InvReplicaFloor   = "replica-floor"    // never fewer replicas than the smallest allocation since the fleet settled
	InvDelivered      = "delivered"        // every cluster's Flux applies an edit within the bed's delivery wait once the faults are repaired
	InvConverged      = "converged"        // every cluster converges within the bound once the faults are repaired
	InvStatusAgrees   = "status-agrees"    // polykube-status's exit code says what the fleet is
	InvStatusBlind    = "status-not-blind" // a stopped API server is reported unreachable
)

type key struct{ cluster, workload string }

// Tracker checks the invariants over a stream of observations. It knows the desired state's
// history since the fleet last settled: the smallest allocation each Deployment was given, and
// which Deployments were meant to go away (not a target at some point).
type Tracker struct {
	clusters []string
	settled  map[key]DeploymentSeen // what each Deployment was when the fleet last settled
	floor    map[key]int32          // the smallest allocation since then, for the targeted ones
	mayGo    map[key]bool           // not a target at some point since then
	checks   int
}

// NewTracker tracks the clusters' Workloads; Settle gives it the first settled fleet.
func NewTracker(clusters []string) *Tracker {
	return &Tracker{clusters: slices.Clone(clusters)}
}

// Checks is how many invariant checks were made.
func (t *Tracker) Checks() int { return t.checks }

// Settle records a converged fleet: from now on, what each cluster runs is what must be kept.
func (t *Tracker) Settle(f *Fleet, obs []Observation) error {
	t.settled, t.floor = map[key]DeploymentSeen{}, map[key]int32{}
	t.mayGo = map[key]bool{}
	for _, o := range obs {
		for _, w := range Workloads {
			k := key{o.Cluster, w}
			if d, ok := o.Deployments[w]; ok {
				t.settled[k] = d
			}
			n, targeted, err := f.Allocation(w, o.Cluster)
			if err != nil {
				return err
			}
			if targeted {
				t.floor[k] = n
			} else {
				t.mayGo[k] = true
			}
		}
	}
	return nil
}

// Desire records a change of the desired state (a commit): the floor of each Deployment falls
// to the new allocation if lower; one that is no target any more may go.
func (t *Tracker) Desire(f *Fleet) error {
	for _, c := range t.clusters {
		for _, w := range Workloads {
			k := key{c, w}
			n, targeted, err := f.Allocation(w, c)
			if err != nil {
				return err
			}
			switch {
			case !targeted:
				t.mayGo[k] = true
				delete(t.floor, k)
			case t.mayGo[k]:
				// Not a target a moment ago: its floor starts from nothing.
			default:
				if fl, ok := t.floor[k]; !ok || n < fl {
					t.floor[k] = n
				}
			}
		}
	}
	return nil
}

// Observe checks one round of observations against what must be kept.
func (t *Tracker) Observe(step int, obs []Observation) []Violation {
	var out []Violation
	for _, o := range obs {
		if !o.Reachable {
			continue
		}
		for _, w := range Workloads {
			k := key{o.Cluster, w}
			was, existed := t.settled[k]
			now, exists := o.Deployments[w]
			t.checks += 3
			if existed && !t.mayGo[k] {
				switch {
				case !exists:
					out = append(out, Violation{step, InvDeploymentKept, o.Cluster, w, "its Deployment was deleted while the Workload stayed targeted here"})
				case now.UID != was.UID:
					out = append(out, Violation{step, InvDeploymentKept, o.Cluster, w, fmt.Sprintf("its Deployment was replaced (uid %s, was %s)", now.UID, was.UID)})
				}
			}
			if existed && exists && now.UID == was.UID && now.Template != was.Template {
				out = append(out, Violation{step, InvTemplateKept, o.Cluster, w, fmt.Sprintf("its pod template changed (%s, was %s) though the Workload did not", now.Template, was.Template)})
			}
			if fl, ok := t.floor[k]; ok && exists && now.Replicas < fl {
				out = append(out, Violation{step, InvReplicaFloor, o.Cluster, w, fmt.Sprintf("%d replicas, below %d, the least it was given since the fleet settled", now.Replicas, fl)})
			}
		}
	}
	return out
}

// Converged says why the observations are not yet the desired state ("" when they are): every
// cluster reachable, every targeted Workload's Deployment at its allocation with the pods it had
// when the fleet settled, no Deployment where it is no target,
// and every Workload Ready for its generation.
func (t *Tracker) Converged(f *Fleet, obs []Observation) (string, error) {
	var why []string
	for _, o := range obs {
		if !o.Reachable {
			why = append(why, o.Cluster+" unreachable")
			continue
		}
		for _, w := range Workloads {
			n, targeted, err := f.Allocation(w, o.Cluster)
			if err != nil {
				return "", err
			}
			d, exists := o.Deployments[w]
			switch {
			case targeted && !exists:
				why = append(why, fmt.Sprintf("%s: %s has no Deployment (want %d replicas)", o.Cluster, w, n))
			case targeted && d.Replicas != n:
				why = append(why, fmt.Sprintf("%s: %s has %d replicas, want %d", o.Cluster, w, d.Replicas, n))
			case !targeted && exists:
				why = append(why, fmt.Sprintf("%s: %s still has a Deployment though no target here", o.Cluster, w))
			}
			if was, ok := t.settled[key{o.Cluster, w}]; ok && exists && was.UID == d.UID && d.Template != was.Template {
				why = append(why, fmt.Sprintf("%s: %s's pod template is not back to what it was", o.Cluster, w))
			}
			alloc, err := f.allocations(w)
			if err != nil {
				return "", err
			}
			if why1 := notReady(o.Cluster, "Workload "+w, o.Workloads[w], hasKey(o.Workloads, w)); why1 != "" {
				why = append(why, why1)
			} else if want := placement.SpecHash(f.Workload(w).Spec); o.Workloads[w].SpecHash != want {
				// Every cluster must run the committed spec, or polykube-status rightly reports
				// the clusters disagreeing, even when the replicas happen to be the same.
				why = append(why, fmt.Sprintf("%s: Workload %s runs spec %s, not the committed %s (its Flux has not applied the commit)", o.Cluster, w, o.Workloads[w].SpecHash, want))
			} else if got, want := o.Workloads[w].Allocation, AllocationKey(alloc); got != want {
				// A roster edit changes no Workload's generation: the status must show the new
				// allocation, or polykube-status rightly sees the clusters disagree.
				why = append(why, fmt.Sprintf("%s: Workload %s reports the allocation %s, not the committed roster's %v (%s)", o.Cluster, w, got, alloc, want))
			}
		}
		// The binding reports its Secret found again: the operator cannot watch Secrets and
		// checks a missing one again every 30 s, so a restored Secret is seen that late.
		if w := notReady(o.Cluster, "DatastoreBinding "+SecretName, o.Bindings[SecretName], hasKey(o.Bindings, SecretName)); w != "" {
			why = append(why, w)
		}
	}
	return strings.Join(why, "; "), nil
}

func hasKey(m map[string]WorkloadSeen, k string) bool { _, ok := m[k]; return ok }

// notReady says why an object's status is not Ready for its generation ("" when it is).
func notReady(cluster, what string, s WorkloadSeen, found bool) string {
	switch {
	case !found:
		return fmt.Sprintf("%s: no %s", cluster, what)
	case s.ObservedGeneration != s.Generation:
		return fmt.Sprintf("%s: %s observed generation %d of %d", cluster, what, s.ObservedGeneration, s.Generation)
	case !s.Ready:
		return fmt.Sprintf("%s: %s not Ready (%s: %s)", cluster, what, s.Reason, s.Message)
	}
	return ""
}

// AllocationKey is how WorkloadSeen.Allocation names an allocation: its digest
// (placement.AllocationDigest) and its number of targets.
func AllocationKey(shares map[string]int32) string {
	alloc := make(placement.Allocation, 0, len(shares))
	for c, r := range shares {
		alloc = append(alloc, placement.Share{Cluster: c, Replicas: r})
	}
	return fmt.Sprintf("%s/%d", placement.AllocationDigest(alloc), len(alloc))
}
