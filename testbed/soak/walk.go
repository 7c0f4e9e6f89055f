package soak

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/polykube/polykube/testbed"
)

// Kind is what a step does.
type Kind string

// The steps of the walk. A fault is put in effect, held, and repaired within its step; an edit
// is a commit to Git (or, for the Secret, a change in one cluster) that the next steps live with.
const (
	StepFault        Kind = "fault"         // a testbed.Fault stopped, held, started again
	StepScale        Kind = "scale"         // the weighted Workload's total changed through Git
	StepRelabel      Kind = "relabel"       // a ClusterMember's soak label flipped through Git
	StepSecretDelete Kind = "secret-delete" // the binding's Secret deleted in a cluster, restored at the step's end
)

// Step is one move of the walk.
type Step struct {
	N       int
	Kind    Kind
	Fault   testbed.Fault // StepFault
	Cluster string        // StepFault (not git), StepRelabel, StepSecretDelete
	Total   int32         // StepScale: the new total
	Hold    time.Duration // how long the fault or the missing Secret lasts
	// Edit is an edit made while the fault holds (a commit, when Git is not the fault): the
	// fleet must take it once the fault is repaired.
	Edit *Step
}

func (s Step) String() string {
	var out string
	switch s.Kind {
	case StepFault:
		out = fmt.Sprintf("fault %s", s.Fault)
		if s.Cluster != "" {
			out += " " + s.Cluster
		}
		out += fmt.Sprintf(" for %s", s.Hold)
	case StepScale:
		out = fmt.Sprintf("scale %s to %d in Git", WeightedName, s.Total)
	case StepRelabel:
		out = fmt.Sprintf("relabel ClusterMember %s in Git", s.Cluster)
	case StepSecretDelete:
		out = fmt.Sprintf("delete Secret %s in %s for %s", SecretName, s.Cluster, s.Hold)
	}
	if s.Edit != nil {
		out += ", meanwhile " + s.Edit.String()
	}
	return fmt.Sprintf("step %d: %s", s.N, out)
}

// Walk draws the steps of a soak from its seed: the same seed and clusters give the same steps.
type Walk struct {
	rng      *rand.Rand
	clusters []string
	faults   []testbed.Fault
	maxHold  time.Duration
	n        int
}

// NewWalk starts a walk over the clusters with the faults the bed can put in effect; holds last
// from a second up to maxHold.
func NewWalk(seed uint64, clusters []string, faults []testbed.Fault, maxHold time.Duration) *Walk {
	return &Walk{
		rng:      rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		clusters: slices.Clone(clusters), faults: slices.Clone(faults), maxHold: maxHold,
	}
}

// Next draws the next step.
func (w *Walk) Next() Step {
	w.n++
	s := Step{N: w.n}
	switch r := w.rng.IntN(10); {
	case r < 5 && len(w.faults) > 0:
		s.Kind, s.Fault = StepFault, w.faults[w.rng.IntN(len(w.faults))]
		if s.Fault != testbed.FaultGit {
			s.Cluster = w.cluster()
		}
		s.Hold = w.hold()
		// Half the faults that leave Git up come with an edit the fleet takes afterwards.
		if s.Fault != testbed.FaultGit && w.rng.IntN(2) == 0 {
			e := w.edit()
			e.N = s.N
			s.Edit = &e
		}
	case r < 8:
		s = w.edit()
		s.N = w.n
	default:
		s.Kind, s.Cluster, s.Hold = StepSecretDelete, w.cluster(), w.hold()
	}
	return s
}

func (w *Walk) edit() Step {
	if w.rng.IntN(2) == 0 {
		return Step{Kind: StepScale, Total: int32(3 + w.rng.IntN(7))}
	}
	return Step{Kind: StepRelabel, Cluster: w.cluster()}
}

func (w *Walk) cluster() string { return w.clusters[w.rng.IntN(len(w.clusters))] }

func (w *Walk) hold() time.Duration {
	return time.Second + time.Duration(w.rng.Int64N(int64(w.maxHold-time.Second)+1)).Round(time.Second)
}
