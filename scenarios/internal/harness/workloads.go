package harness

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// Target is one row of a Workload's distribution as a feature writes it; nil means unset.
type Target struct {
	Cluster  string
	Replicas *int32
	Weight   *int32
}

// DefineWorkload builds a Workload in the scenario's namespace with a one-container template
// (an image kwok never pulls, or the echo server on a federation with the datapath
// capability) and remembers it under
// its name. total is nil for no distribution.replicas.
func (sc *Scenario) DefineWorkload(name, strategy string, total *int32, targets []Target) *polykubev1alpha1.Workload {
	w := &polykubev1alpha1.Workload{
		TypeMeta:   metav1.TypeMeta{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sc.Namespace},
		Spec: polykubev1alpha1.WorkloadSpec{
			Distribution: polykubev1alpha1.Distribution{Strategy: strategy, Replicas: total},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{
					Name:  "app",
					Image: "example.com/" + name + ":v1",
					Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}},
				}}},
			},
		},
	}
	// With the datapath capability the pods really run: give them an image the clusters have.
	if dp, err := sc.Datapath(); err == nil {
		tmpl := dp.EchoTemplate()
		if tmpl.Labels == nil {
			tmpl.Labels = map[string]string{}
		}
		tmpl.Labels["app"] = name
		// Features name the one container "app" on every bed.
		tmpl.Spec.Containers[0].Name = "app"
		w.Spec.Template = tmpl
	}
	for _, t := range targets {
		w.Spec.Distribution.Targets = append(w.Spec.Distribution.Targets, polykubev1alpha1.DistributionTarget{
			ClusterRef: t.Cluster, Replicas: t.Replicas, Weight: t.Weight,
		})
	}
	sc.Workloads[name] = w
	return w
}

// Workload returns a Workload the scenario defined, or an error naming the ones it has.
func (sc *Scenario) Workload(name string) (*polykubev1alpha1.Workload, error) {
	w, ok := sc.Workloads[name]
	if !ok {
		return nil, fmt.Errorf("the scenario defines no Workload %q (it has %v); add a step \"a Workload %q with strategy …\" before this one", name, sortedKeys(sc.Workloads), name)
	}
	return w, nil
}

// CommitWorkload writes the Workload's manifest to Git.
func (sc *Scenario) CommitWorkload(ctx context.Context, name string) error {
	w, err := sc.Workload(name)
	if err != nil {
		return err
	}
	data, err := gitrepo.Manifest(w)
	if err != nil {
		return fmt.Errorf("encode Workload %s: %w", name, err)
	}
	return sc.commit(ctx, fmt.Sprintf("scenarios: Workload %s/%s", sc.Namespace, name), map[string][]byte{gitName("Workload", name): data})
}

// RemoveWorkload removes the Workload's manifest from Git.
func (sc *Scenario) RemoveWorkload(ctx context.Context, name string) error {
	p := gitName("Workload", name)
	if _, ok := sc.gitFiles[p]; !ok {
		return fmt.Errorf("the scenario never committed the Workload %q to Git", name)
	}
	return sc.commit(ctx, fmt.Sprintf("scenarios: remove Workload %s/%s", sc.Namespace, name), map[string][]byte{p: nil})
}

// ApplyWorkload applies the Workload directly to every cluster, as Flux would.
func (sc *Scenario) ApplyWorkload(ctx context.Context, name string) error {
	w, err := sc.Workload(name)
	if err != nil {
		return err
	}
	data, err := gitrepo.Manifest(w)
	if err != nil {
		return fmt.Errorf("encode Workload %s: %w", name, err)
	}
	return sc.ApplyEverywhere(ctx, data)
}

// deploymentHistory is what the scenario saw of one Workload's Deployments.
type deploymentHistory struct {
	// uids holds, per cluster, every Deployment UID ever seen for the Workload.
	uids map[string][]string
	// observations are the per-cluster replicas each time the Workload converged.
	observations []observation
	// lowest is, per cluster, the lowest spec.replicas seen since the last observation.
	lowest map[string]int32
}

// observation is the replicas of a converged Workload, and the lowest each cluster ran on the
// way there since the observation before.
type observation struct {
	replicas map[string]int32
	lowest   map[string]int32
}

func (sc *Scenario) history(workload string) *deploymentHistory {
	h, ok := sc.deployments[workload]
	if !ok {
		h = &deploymentHistory{uids: map[string][]string{}, lowest: map[string]int32{}}
		sc.deployments[workload] = h
	}
	return h
}

// localDeployments lists the Deployments of a Workload in one cluster: any Deployment in the
// namespace carrying the Workload's label or its name.
func (sc *Scenario) localDeployments(ctx context.Context, c client.Client, workload string) ([]appsv1.Deployment, error) {
	var list appsv1.DeploymentList
	if err := c.List(ctx, &list, client.InNamespace(sc.Namespace)); err != nil {
		return nil, fmt.Errorf("list Deployments: %w", err)
	}
	var out []appsv1.Deployment
	for _, d := range list.Items {
		if d.Name == workload || d.Labels[polykubev1alpha1.WorkloadNameLabel] == workload {
			out = append(out, d)
		}
	}
	return out, nil
}

// observe reads the Workload's Deployments in one cluster, records their UIDs and replicas,
// and returns the single Deployment (nil when there is none).
func (sc *Scenario) observe(ctx context.Context, cluster string, c client.Client, workload string) (*appsv1.Deployment, error) {
	ds, err := sc.localDeployments(ctx, c, workload)
	if err != nil {
		return nil, err
	}
	h := sc.history(workload)
	for _, d := range ds {
		if !slices.Contains(h.uids[cluster], string(d.UID)) {
			h.uids[cluster] = append(h.uids[cluster], string(d.UID))
		}
		if d.Spec.Replicas != nil {
			if low, ok := h.lowest[cluster]; !ok || *d.Spec.Replicas < low {
				h.lowest[cluster] = *d.Spec.Replicas
			}
		}
	}
	switch len(ds) {
	case 0:
		return nil, nil
	case 1:
		return &ds[0], nil
	default:
		names := make([]string, len(ds))
		for i, d := range ds {
			names[i] = d.Name
		}
		return nil, fmt.Errorf("%d Deployments for Workload %q (%s); each operator must create exactly one", len(ds), workload, strings.Join(names, ", "))
	}
}

// workloadProcessed checks that the cluster's operator has processed the current spec of its
// copy of the Workload and reported itself.
func (sc *Scenario) workloadProcessed(ctx context.Context, cluster string, c client.Client, name string) (*polykubev1alpha1.Workload, error) {
	var w polykubev1alpha1.Workload
	if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: name}, &w); err != nil {
		return nil, fmt.Errorf("get Workload %s: %w", name, err)
	}
	if want, ok := sc.Workloads[name]; ok && (!equalDistribution(want.Spec.Distribution, w.Spec.Distribution) || want.Spec.Suspend != w.Spec.Suspend) {
		return nil, fmt.Errorf("Workload %s does not have the spec the scenario last committed yet%s", name, fluxNotReady(ctx, c))
	}
	if w.Status.ObservedGeneration != w.Generation {
		return nil, fmt.Errorf("Workload %s generation %d not yet processed (status.observedGeneration %d)", name, w.Generation, w.Status.ObservedGeneration)
	}
	if w.Status.Cluster != cluster {
		return nil, fmt.Errorf("Workload %s status.cluster is %q, want %q", name, w.Status.Cluster, cluster)
	}
	return &w, nil
}

func equalDistribution(a, b polykubev1alpha1.Distribution) bool {
	ya, _ := yaml.Marshal(a)
	yb, _ := yaml.Marshal(b)
	return string(ya) == string(yb)
}

// AwaitAllocated waits until every cluster the Workload's spec allocates replicas to runs them
// ready (AwaitReplicas of placement.ForWorkload): a step that judges traffic waits for it, so
// that a slice still starting is not taken for one the mesh left out.
func (sc *Scenario) AwaitAllocated(ctx context.Context, workload string) error {
	w, err := sc.Workload(workload)
	if err != nil {
		return err
	}
	alloc, err := placement.ForWorkload(w)
	if err != nil {
		return fmt.Errorf("allocate Workload %q: %w", workload, err)
	}
	want := map[string]int32{}
	for _, s := range alloc {
		want[s.Cluster] = s.Replicas
	}
	return sc.AwaitReplicas(ctx, workload, want)
}

// AwaitReplicas waits until each named cluster runs its Deployment of the Workload with the
// given replicas, all ready, made by that cluster's operator for the current spec. It then
// records the observation.
func (sc *Scenario) AwaitReplicas(ctx context.Context, workload string, want map[string]int32) error {
	clusters := sortedKeys(want)
	what := fmt.Sprintf("the Deployments of %q to run %s", workload, formatShares(want))
	err := Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, clusters, func(ctx context.Context, cl string, c client.Client) error {
			if _, err := sc.workloadProcessed(ctx, cl, c, workload); err != nil {
				return err
			}
			d, err := sc.observe(ctx, cl, c, workload)
			if err != nil {
				return err
			}
			if d == nil {
				return fmt.Errorf("no Deployment for Workload %q", workload)
			}
			return checkDeployment(d, cl, workload, want[cl])
		})
	})
	if err != nil {
		return err
	}
	sc.record(workload, want)
	return nil
}

func (sc *Scenario) record(workload string, replicas map[string]int32) {
	h := sc.history(workload)
	h.observations = append(h.observations, observation{replicas: maps.Clone(replicas), lowest: h.lowest})
	h.lowest = map[string]int32{}
}

// checkDeployment checks one Deployment against its cluster and desired replicas.
func checkDeployment(d *appsv1.Deployment, cluster, workload string, replicas int32) error {
	var problems []string
	if d.Labels[polykubev1alpha1.ManagedByLabel] != polykubev1alpha1.ManagedByValue {
		problems = append(problems, fmt.Sprintf("label %s=%q, want %q", polykubev1alpha1.ManagedByLabel, d.Labels[polykubev1alpha1.ManagedByLabel], polykubev1alpha1.ManagedByValue))
	}
	if d.Labels[polykubev1alpha1.ClusterLabel] != cluster {
		problems = append(problems, fmt.Sprintf("label %s=%q, want %q (made by another cluster's operator?)", polykubev1alpha1.ClusterLabel, d.Labels[polykubev1alpha1.ClusterLabel], cluster))
	}
	owner := metav1.GetControllerOf(d)
	if owner == nil || owner.Kind != "Workload" || owner.Name != workload {
		problems = append(problems, fmt.Sprintf("controller owner %v, want Workload %s", owner, workload))
	}
	got := int32(1)
	if d.Spec.Replicas != nil {
		got = *d.Spec.Replicas
	}
	if got != replicas {
		problems = append(problems, fmt.Sprintf("spec.replicas %d, want %d", got, replicas))
	}
	if d.Status.ObservedGeneration != d.Generation {
		problems = append(problems, fmt.Sprintf("Deployment generation %d not yet observed", d.Generation))
	}
	if d.Status.ReadyReplicas != replicas || d.Status.Replicas != replicas {
		problems = append(problems, fmt.Sprintf("%d/%d replicas ready (status.replicas %d)", d.Status.ReadyReplicas, replicas, d.Status.Replicas))
	}
	if len(problems) > 0 {
		return fmt.Errorf("Deployment %s: %s", d.Name, strings.Join(problems, ", "))
	}
	return nil
}

// AwaitTotal waits until the Workload's Deployments, in every cluster, are ready and their
// replicas add up to total and equal the allocation of the current spec; it records them.
func (sc *Scenario) AwaitTotal(ctx context.Context, workload string, total int32) error {
	w, err := sc.Workload(workload)
	if err != nil {
		return err
	}
	alloc, err := placement.ForWorkload(w)
	if err != nil {
		return fmt.Errorf("the scenario's Workload %q does not allocate: %w", workload, err)
	}
	if alloc.Total() != int64(total) {
		return fmt.Errorf("the Workload %q as committed allocates %d replicas in total, not %d: check the feature", workload, alloc.Total(), total)
	}
	want := map[string]int32{}
	for _, s := range alloc {
		want[s.Cluster] = s.Replicas
	}
	return sc.AwaitReplicas(ctx, workload, want)
}

// CheckNeverLowered fails when a cluster's Deployment ran fewer replicas, at any time since
// the observation before the last one, than it did at that earlier observation.
func (sc *Scenario) CheckNeverLowered(workload string) error {
	h := sc.history(workload)
	n := len(h.observations)
	if n < 2 {
		return fmt.Errorf("the Workload %q was observed converged %d time(s); a before and an after are needed", workload, n)
	}
	before, after := h.observations[n-2], h.observations[n-1]
	var problems []string
	for _, cl := range sortedKeys(before.replicas) {
		b := before.replicas[cl]
		if a := after.replicas[cl]; a < b {
			problems = append(problems, fmt.Sprintf("cluster %q went from %d to %d", cl, b, a))
		} else if low, ok := after.lowest[cl]; ok && low < b {
			problems = append(problems, fmt.Sprintf("cluster %q dipped from %d to %d during the change", cl, b, low))
		}
	}
	if len(problems) > 0 {
		return fmt.Errorf("scaling %q lowered clusters: %s", workload, strings.Join(problems, "; "))
	}
	return nil
}

// CheckNoRecreate fails when any cluster ever had more than one Deployment UID for the
// Workload (one was deleted and made again, or duplicated), or lost the one it had.
func (sc *Scenario) CheckNoRecreate(ctx context.Context, workload string) error {
	h := sc.history(workload)
	if len(h.uids) == 0 {
		return fmt.Errorf("no Deployment of %q was ever seen", workload)
	}
	return sc.forEachCluster(ctx, sortedKeys(h.uids), func(ctx context.Context, cl string, c client.Client) error {
		d, err := sc.observe(ctx, cl, c, workload)
		if err != nil {
			return err
		}
		if uids := h.uids[cl]; len(uids) > 1 {
			return fmt.Errorf("the Deployment of %q was replaced: UIDs seen %v", workload, uids)
		}
		if d == nil {
			return fmt.Errorf("the Deployment of %q (UID %s) was deleted", workload, h.uids[cl][0])
		}
		return nil
	})
}

// CheckOwnSlices checks that in every cluster the Workload's Deployment, where there is one,
// was made by that cluster's operator for that cluster alone.
func (sc *Scenario) CheckOwnSlices(ctx context.Context, workload string) error {
	return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		var w polykubev1alpha1.Workload
		if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, &w); err != nil {
			return fmt.Errorf("get Workload %s: %w", workload, err)
		}
		d, err := sc.observe(ctx, cl, c, workload)
		if err != nil || d == nil {
			return err
		}
		var roster []polykubev1alpha1.ClusterMember
		if placement.UsesRoster(&w) {
			list := &polykubev1alpha1.ClusterMemberList{}
			if err := c.List(ctx, list); err != nil {
				return fmt.Errorf("list ClusterMembers in %s to resolve the targetSelectors of %s: %w", cl, workload, err)
			}
			roster = list.Items
		}
		alloc, err := placement.ForWorkloadIn(&w, roster)
		if err != nil {
			return err
		}
		want, _ := alloc.For(cl)
		if err := checkDeployment(d, cl, workload, want); err != nil {
			return err
		}
		if ref := metav1.GetControllerOf(d); ref.UID != w.UID {
			return fmt.Errorf("Deployment %s is owned by Workload UID %s, not by this cluster's copy %s", d.Name, ref.UID, w.UID)
		}
		return nil
	})
}

// AwaitNoDeployment waits until the cluster's operator has processed its copy of the Workload
// and checks that it made no Deployment for it.
func (sc *Scenario) AwaitNoDeployment(ctx context.Context, cluster, workload string) error {
	what := fmt.Sprintf("cluster %q to hold the Workload %q, processed, with no Deployment", cluster, workload)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, []string{cluster}, func(ctx context.Context, cl string, c client.Client) error {
			if _, err := sc.workloadProcessed(ctx, cl, c, workload); err != nil {
				return err
			}
			d, err := sc.observe(ctx, cl, c, workload)
			if err != nil {
				return err
			}
			if d != nil {
				return fmt.Errorf("Deployment %s exists with %d replicas", d.Name, ptrOr(d.Spec.Replicas, 1))
			}
			return nil
		})
	})
}

// AwaitWorkloadGone waits until no cluster holds the Workload or a Deployment for it.
func (sc *Scenario) AwaitWorkloadGone(ctx context.Context, workload string) error {
	what := fmt.Sprintf("the Workload %q and its Deployments to be gone from every cluster", workload)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			var w polykubev1alpha1.Workload
			err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, &w)
			if err == nil {
				return fmt.Errorf("Workload %s still exists (deletionTimestamp %v)", workload, w.DeletionTimestamp)
			}
			if !apierrors.IsNotFound(err) {
				return err
			}
			ds, err := sc.localDeployments(ctx, c, workload)
			if err != nil {
				return err
			}
			if len(ds) > 0 {
				return fmt.Errorf("Deployment %s still exists", ds[0].Name)
			}
			return nil
		})
	})
}

// AwaitSameAllocation waits until every cluster has processed the Workload and reports the
// allocation placement computes from the spec: its digest (status.allocation, decision 0013),
// or every target's share (status.targets) from an operator of the previous release, and its
// own share.
func (sc *Scenario) AwaitSameAllocation(ctx context.Context, workload string) error {
	w, err := sc.Workload(workload)
	if err != nil {
		return err
	}
	var want map[string]int32
	wantOf := func(ctx context.Context) error {
		var roster []polykubev1alpha1.ClusterMember
		if placement.UsesRoster(w) {
			// Targets chosen by labels resolve over the roster: the one the first cluster holds,
			// which every cluster must agree with once Git is delivered.
			c, err := sc.Clients.Admin(sc.Fed.Clusters()[0])
			if err != nil {
				return err
			}
			var list polykubev1alpha1.ClusterMemberList
			if err := c.List(ctx, &list); err != nil {
				return fmt.Errorf("list ClusterMembers in cluster %q: %w", sc.Fed.Clusters()[0], err)
			}
			roster = list.Items
		}
		alloc, err := placement.ForWorkloadIn(w, roster)
		if err != nil {
			return fmt.Errorf("the scenario's Workload %q does not allocate: %w", workload, err)
		}
		want = map[string]int32{}
		for _, s := range alloc {
			want[s.Cluster] = s.Replicas
		}
		return nil
	}
	if err := wantOf(ctx); err != nil {
		return err
	}
	what := fmt.Sprintf("every cluster to report the allocation %s for %q (status.allocation, or status.targets from the previous release)", formatShares(want), workload)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		if err := wantOf(ctx); err != nil {
			return err
		}
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			got, err := sc.workloadProcessed(ctx, cl, c, workload)
			if err != nil {
				return err
			}
			if len(got.Status.Targets) > 0 {
				have := map[string]int32{}
				for _, t := range got.Status.Targets {
					have[t.Cluster] = t.DesiredReplicas
				}
				if !maps.Equal(have, want) {
					return fmt.Errorf("status.targets %s", formatShares(have))
				}
				return nil
			}
			var alloc placement.Allocation
			for c, r := range want {
				alloc = append(alloc, placement.Share{Cluster: c, Replicas: r})
			}
			digest, n, ok := placement.ReportedAllocation(&got.Status)
			if !ok || digest != placement.AllocationDigest(alloc) || n != len(want) {
				return fmt.Errorf("status.allocation %+v, not the digest %s of %d targets", got.Status.Allocation, placement.AllocationDigest(alloc), len(want))
			}
			if mine, targeted := want[cl]; targeted && got.Status.DesiredReplicas != mine && got.Status.Autoscaling == nil {
				return fmt.Errorf("status.desiredReplicas %d, not its share %d", got.Status.DesiredReplicas, mine)
			}
			return nil
		})
	})
}

// CheckReplicasHold checks that the Workload's Deployments keep the replicas last observed,
// and their UIDs, for the whole hold window.
func (sc *Scenario) CheckReplicasHold(ctx context.Context, workload, while string) error {
	return sc.checkReplicasHold(ctx, workload, while, sc.Config.Wait(WaitHold))
}

// checkReplicasHold checks that the Workload's Deployments keep the replicas last observed,
// and their UIDs, for the window w.
func (sc *Scenario) checkReplicasHold(ctx context.Context, workload, while string, w topology.Wait) error {
	h := sc.history(workload)
	if len(h.observations) == 0 {
		return fmt.Errorf("the replicas of %q were never observed; assert them before asserting that they stay", workload)
	}
	last := h.observations[len(h.observations)-1].replicas
	what := fmt.Sprintf("the Deployments of %q to stay at %s %s", workload, formatShares(last), while)
	return Hold(ctx, w, what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sortedKeys(last), func(ctx context.Context, cl string, c client.Client) error {
			d, err := sc.observe(ctx, cl, c, workload)
			if err != nil {
				return err
			}
			if d == nil {
				return errors.New("the Deployment is gone")
			}
			if got := ptrOr(d.Spec.Replicas, 1); got != last[cl] {
				return fmt.Errorf("spec.replicas %d, was %d", got, last[cl])
			}
			if len(h.uids[cl]) > 1 {
				return fmt.Errorf("the Deployment was replaced: UIDs %v", h.uids[cl])
			}
			return nil
		})
	})
}

func formatShares(m map[string]int32) string {
	parts := make([]string, 0, len(m))
	for _, k := range sortedKeys(m) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, m[k]))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

func ptrOr[T any](p *T, def T) T {
	if p == nil {
		return def
	}
	return *p
}

// CommitManifest writes an object's manifest to Git under the scenario's directory; its
// namespace is set to the scenario's when it is namespaced.
func (sc *Scenario) CommitManifest(ctx context.Context, kind, name string, obj any) error {
	data, err := gitrepo.Manifest(obj)
	if err != nil {
		return fmt.Errorf("encode %s %s: %w", kind, name, err)
	}
	return sc.commit(ctx, fmt.Sprintf("scenarios: %s %s/%s", kind, sc.Namespace, name), map[string][]byte{gitName(kind, name): data})
}

// CommitManifests commits the objects of a manifest, each in the scenario's namespace and a
// file of its own, in one commit, and waits until every cluster's delivery applied it.
func (sc *Scenario) CommitManifests(ctx context.Context, manifest []byte) error {
	objs, err := DecodeManifests(manifest)
	if err != nil {
		return err
	}
	files := map[string][]byte{}
	var names []string
	for _, u := range objs {
		if ns := u.GetNamespace(); ns != "" && ns != sc.Namespace {
			return fmt.Errorf("%s %s: the manifest names the namespace %q; leave it out, the scenario's own (%s) is set", u.GetKind(), u.GetName(), ns, sc.Namespace)
		}
		u.SetNamespace(sc.Namespace)
		data, err := gitrepo.Manifest(u.Object)
		if err != nil {
			return fmt.Errorf("encode %s %s: %w", u.GetKind(), u.GetName(), err)
		}
		files[gitName(u.GetKind(), u.GetName())] = data
		names = append(names, u.GetKind()+" "+u.GetName())
	}
	if err := sc.commit(ctx, fmt.Sprintf("scenarios: %s in %s", strings.Join(names, ", "), sc.Namespace), files); err != nil {
		return err
	}
	return sc.AwaitDelivered(ctx, sc.Fed.Clusters(), sc.Config.Wait(WaitDelivery))
}

// fluxNotReady says why the cluster's Flux Kustomization is not Ready (for example the API
// server refused a committed object), or nothing when it is Ready or cannot be read: a
// commit that never arrives then names its cause.
func fluxNotReady(ctx context.Context, c client.Client) string {
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	if err := c.Get(ctx, fluxKey, ks); err != nil || readyTrue(ks) {
		return ""
	}
	return fmt.Sprintf(" (Flux Kustomization %s is not Ready: %s)", fluxKey, readyMessage(ks))
}
