package status

import (
	"errors"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
)

// weighted is a MultiCloudWeighted Workload with equal weights over clusters.
func weighted(ns, name string, total int32, clusters ...string) polykubev1alpha1.Workload {
	w := polykubev1alpha1.Workload{
		TypeMeta:   metav1.TypeMeta{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Generation: 1},
		Spec: polykubev1alpha1.WorkloadSpec{Distribution: polykubev1alpha1.Distribution{
			Strategy: polykubev1alpha1.StrategyMultiCloudWeighted, Replicas: ptr.To(total),
		}},
	}
	for _, c := range clusters {
		w.Spec.Distribution.Targets = append(w.Spec.Distribution.Targets, polykubev1alpha1.DistributionTarget{ClusterRef: c, Weight: ptr.To[int32](1)})
	}
	return w
}

// operated returns the copy of w as the operator of cluster would have written its status:
// every target's allocation from placement, and its own slice fully ready.
func operated(w polykubev1alpha1.Workload, cluster string) polykubev1alpha1.Workload {
	w = *w.DeepCopy()
	alloc, err := placement.ForWorkload(&w)
	if err != nil {
		panic(err)
	}
	return withStatus(w, cluster, alloc, "hash-"+fmt.Sprint(alloc.Total()))
}

// withStatus gives w the status the operator of cluster writes for alloc: every target's
// share, and its own slice fully ready.
func withStatus(w polykubev1alpha1.Workload, cluster string, alloc placement.Allocation, specHash string) polykubev1alpha1.Workload {
	mine, _ := alloc.For(cluster)
	w.Status = polykubev1alpha1.WorkloadStatus{
		ObservedGeneration: w.Generation, Cluster: cluster, SpecHash: specHash,
		DesiredReplicas: mine, ReadyReplicas: mine, Phase: polykubev1alpha1.PhaseReady,
	}
	for _, s := range alloc {
		t := polykubev1alpha1.TargetStatus{Cluster: s.Cluster, DesiredReplicas: s.Replicas}
		if s.Cluster == cluster {
			t.Local, t.ReadyReplicas, t.Phase = true, ptr.To(mine), polykubev1alpha1.PhaseReady
		}
		w.Status.Targets = append(w.Status.Targets, t)
	}
	return w
}

func federation(name, local string, members ...string) polykubev1alpha1.Federation {
	f := polykubev1alpha1.Federation{
		ObjectMeta: metav1.ObjectMeta{Name: name, Generation: 1},
		Spec:       polykubev1alpha1.FederationSpec{Members: members},
		Status:     polykubev1alpha1.FederationStatus{ObservedGeneration: 1, LocalCluster: local},
	}
	for _, t := range []string{polykubev1alpha1.ClusterIdentifiedCondition, polykubev1alpha1.MembersPresentCondition,
		polykubev1alpha1.ClusterIDsValidCondition, polykubev1alpha1.PodCIDRsDisjointCondition, polykubev1alpha1.ReadyCondition} {
		f.Status.Conditions = append(f.Status.Conditions, metav1.Condition{Type: t, Status: metav1.ConditionTrue, Reason: polykubev1alpha1.ReasonSucceeded})
	}
	return f
}

func member(name string, id int32, local bool) polykubev1alpha1.ClusterMember {
	return polykubev1alpha1.ClusterMember{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: polykubev1alpha1.ClusterMemberSpec{Provider: "kwok", Region: "local",
			Mesh: polykubev1alpha1.ClusterMeshSettings{ClusterID: id, PodCIDRs: []string{fmt.Sprintf("10.%d.0.0/16", 240+id)}}},
		Status: polykubev1alpha1.ClusterMemberStatus{Local: local},
	}
}

func deployment(ns, workload string, replicas int32) appsv1.Deployment {
	return appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: workload, Labels: map[string]string{
			polykubev1alpha1.ManagedByLabel: polykubev1alpha1.ManagedByValue, polykubev1alpha1.WorkloadNameLabel: workload,
		}},
		Spec:   appsv1.DeploymentSpec{Replicas: ptr.To(replicas)},
		Status: appsv1.DeploymentStatus{Replicas: replicas, ReadyReplicas: replicas},
	}
}

var fleetClusters = []string{"alpha", "beta", "gamma"}

// healthyFleet is three clusters (contexts ctx-alpha, ctx-beta, ctx-gamma) whose operators all
// agree: billing-api (6 replicas, 2 each) and web (3 replicas on alpha and beta), a Federation
// "fleet" and three ClusterMembers.
func healthyFleet() []Snapshot {
	billing := weighted("shop", "billing-api", 6, fleetClusters...)
	web := weighted("shop", "web", 3, "alpha", "beta")
	var snaps []Snapshot
	for i, c := range fleetClusters {
		s := Snapshot{Context: "ctx-" + c, Server: fmt.Sprintf("https://127.0.0.1:%d", 6441+i)}
		s.Workloads = []polykubev1alpha1.Workload{operated(billing, c), operated(web, c)}
		s.Federations = []polykubev1alpha1.Federation{federation("fleet", c, fleetClusters...)}
		for j, m := range fleetClusters {
			s.ClusterMembers = append(s.ClusterMembers, member(m, int32(j+1), m == c))
		}
		setOperatorVersion(&s, "v0.1.0")
		s.Deployments = append(s.Deployments, deployment("shop", "billing-api", 2))
		if c != "gamma" {
			r, _ := mustAlloc(web).For(c)
			s.Deployments = append(s.Deployments, deployment("shop", "web", r))
		}
		snaps = append(snaps, s)
	}
	return snaps
}

func mustAlloc(w polykubev1alpha1.Workload) placement.Allocation {
	a, err := placement.ForWorkload(&w)
	if err != nil {
		panic(err)
	}
	return a
}

// unreachable turns a snapshot into one that could not be read.
func unreachable(s Snapshot, reason string) Snapshot {
	return Snapshot{Context: s.Context, Server: s.Server, Reason: reason,
		Err: fmt.Errorf("list workloads.polykube.kismet.io: %w", errors.New("dial tcp "+s.Server[len("https://"):]+": connect: connection refused"))}
}

func findWorkload(s *Snapshot, name string) *polykubev1alpha1.Workload {
	for i := range s.Workloads {
		if s.Workloads[i].Name == name {
			return &s.Workloads[i]
		}
	}
	panic("no workload " + name)
}
