package harness

import (
	"context"
	"fmt"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/gitrepo"
)

// Per-cluster overrides and targets chosen by the roster's labels: what the scenarios of
// features/per-cluster-overrides.feature and features/target-selection.feature set up and check.

// SelectorRule is one row of a Workload's targetSelectors as a feature writes it: the labels a
// ClusterMember must have (key=value, comma-separated) and the replicas or weight each match gets.
type SelectorRule struct {
	Labels   map[string]string
	Replicas *int32
	Weight   *int32
}

// DefineSelectedWorkload builds a Workload like DefineWorkload whose targets are the roster's
// members matching the rules, and remembers it under its name.
func (sc *Scenario) DefineSelectedWorkload(name, strategy string, total *int32, rules []SelectorRule) *polykubev1alpha1.Workload {
	w := sc.DefineWorkload(name, strategy, total, nil)
	for _, r := range rules {
		w.Spec.Distribution.TargetSelectors = append(w.Spec.Distribution.TargetSelectors, polykubev1alpha1.TargetSelector{
			LabelSelector: metav1.LabelSelector{MatchLabels: r.Labels}, Replicas: r.Replicas, Weight: r.Weight,
		})
	}
	return w
}

// AddOverride appends an override, written in YAML as it appears under spec.overrides, to a
// Workload the scenario defined.
func (sc *Scenario) AddOverride(workload, doc string) error {
	w, err := sc.Workload(workload)
	if err != nil {
		return err
	}
	var o polykubev1alpha1.WorkloadOverride
	if err := yaml.UnmarshalStrict([]byte(doc), &o); err != nil {
		return fmt.Errorf("the override is not a spec.overrides entry: %w", err)
	}
	w.Spec.Overrides = append(w.Spec.Overrides, o)
	return nil
}

// ParseLabels reads "key=value, key=value" into a map.
func ParseLabels(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("%q is not a list of key=value labels", s)
		}
		out[k] = v
	}
	return out, nil
}

// withRegistry is the image reference image would be pulled by from registry instead of its
// own: the first path element is a registry when it has a dot or a colon or is localhost, as
// container runtimes read it. The harness's own reading, on purpose not the operator's, so that
// the check does not repeat the code it checks.
func withRegistry(image, registry string) string {
	first, rest, ok := strings.Cut(image, "/")
	if ok && (strings.ContainsAny(first, ".:") || first == "localhost") {
		return registry + "/" + rest
	}
	return registry + "/" + image
}

// AwaitContainerImage waits until the cluster's operator has processed the current spec and its
// Deployment of the Workload runs the named container with the template's image, pulled from
// registry when that is not empty.
func (sc *Scenario) AwaitContainerImage(ctx context.Context, cluster, workload, container, registry string) error {
	w, err := sc.Workload(workload)
	if err != nil {
		return err
	}
	written := ""
	for _, c := range w.Spec.Template.Spec.Containers {
		if c.Name == container {
			written = c.Image
		}
	}
	if written == "" {
		return fmt.Errorf("the scenario's Workload %q has no container %q", workload, container)
	}
	want := written
	if registry != "" {
		want = withRegistry(written, registry)
	}
	what := fmt.Sprintf("the Deployment of %q in cluster %q to run image %s in container %q", workload, cluster, want, container)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, []string{cluster}, func(ctx context.Context, cl string, c client.Client) error {
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
			for _, ct := range d.Spec.Template.Spec.Containers {
				if ct.Name == container {
					if ct.Image != want {
						return fmt.Errorf("Deployment %s runs image %s in container %q", d.Name, ct.Image, container)
					}
					return nil
				}
			}
			return fmt.Errorf("Deployment %s has no container %q", d.Name, container)
		})
	})
}

// AwaitAppliedOverrides waits until each named cluster's copy of the Workload, processed,
// reports exactly the named overrides in status.appliedOverrides, in order, and an effective
// template hash.
func (sc *Scenario) AwaitAppliedOverrides(ctx context.Context, workload string, want map[string][]string) error {
	clusters := sortedKeys(want)
	parts := make([]string, 0, len(clusters))
	for _, cl := range clusters {
		parts = append(parts, fmt.Sprintf("%s=[%s]", cl, strings.Join(want[cl], ",")))
	}
	what := fmt.Sprintf("the Workload %q to report the overrides applied %s", workload, strings.Join(parts, " "))
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, clusters, func(ctx context.Context, cl string, c client.Client) error {
			w, err := sc.workloadProcessed(ctx, cl, c, workload)
			if err != nil {
				return err
			}
			if !slices.Equal(w.Status.AppliedOverrides, want[cl]) && len(w.Status.AppliedOverrides)+len(want[cl]) > 0 {
				return fmt.Errorf("status.appliedOverrides %v", w.Status.AppliedOverrides)
			}
			if w.Status.EffectiveTemplateHash == "" {
				return fmt.Errorf("status.effectiveTemplateHash is empty")
			}
			return nil
		})
	})
}

// CheckNotEdited fails when a cluster's copy of the Workload has had its spec changed since it
// was created (metadata.generation above 1): the scenario committed it once.
func (sc *Scenario) CheckNotEdited(ctx context.Context, workload string) error {
	return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		var w polykubev1alpha1.Workload
		if err := c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: workload}, &w); err != nil {
			return fmt.Errorf("get Workload %s: %w", workload, err)
		}
		if w.Generation != 1 {
			return fmt.Errorf("Workload %s is at generation %d: its spec was changed after it was created", workload, w.Generation)
		}
		return nil
	})
}

// RelabelMember changes, through Git, the labels of a cluster's ClusterMember in the roster
// every cluster receives: a kustomize patch in the roster's kustomization.yaml sets them. The
// roster file itself is untouched, and teardown restores the kustomization, waiting until every
// cluster has the roster back, so the next scenario sees the topology's labels.
func (sc *Scenario) RelabelMember(ctx context.Context, member string, labels map[string]string) error {
	if !slices.Contains(sc.Fed.Clusters(), member) {
		return fmt.Errorf("the federation has no cluster %q (it has %v)", member, sc.Fed.Clusters())
	}
	patch, err := yaml.Marshal(map[string]any{
		"apiVersion": polykubev1alpha1.GroupVersion.String(),
		"kind":       "ClusterMember",
		"metadata":   map[string]any{"name": member},
		"spec":       map[string]any{"labels": labels},
	})
	if err != nil {
		return err
	}
	file := gitrepo.RosterDir + "/kustomization.yaml"
	changed := gitrepo.RosterKustomization([]gitrepo.Patch{{Kind: "ClusterMember", Name: member, Patch: string(patch)}})
	if err := sc.commitOutside(ctx, fmt.Sprintf("scenarios: label ClusterMember %s %v", member, labels), file, changed); err != nil {
		return err
	}
	sc.OnTeardown("the roster's labels of "+member, func(ctx context.Context) error {
		return sc.commitOutside(ctx, "scenarios: the roster as the topology has it", file, gitrepo.RosterKustomization(nil))
	})
	return sc.AwaitMemberLabels(ctx, member, labels)
}

// commitOutside commits one file outside the scenario's directory and waits until every cluster
// has applied the revision.
func (sc *Scenario) commitOutside(ctx context.Context, message, file string, data []byte) error {
	rev, err := sc.Fed.Git().Commit(ctx, message, map[string][]byte{file: data}, nil)
	if err != nil {
		return fmt.Errorf("commit to Git (%s): %w", message, err)
	}
	sc.Revision = rev
	return sc.AwaitDelivered(ctx, sc.Fed.Clusters(), sc.Config.Wait(WaitDelivery))
}

// AwaitMemberLabels waits until every cluster's ClusterMember of member has the labels.
func (sc *Scenario) AwaitMemberLabels(ctx context.Context, member string, labels map[string]string) error {
	what := fmt.Sprintf("every cluster's ClusterMember %s to have the labels %v", member, labels)
	return Await(ctx, sc.Config.Wait(WaitDelivery), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
			var m polykubev1alpha1.ClusterMember
			if err := c.Get(ctx, client.ObjectKey{Name: member}, &m); err != nil {
				return fmt.Errorf("get ClusterMember %s: %w", member, err)
			}
			for k, v := range labels {
				if got, ok := m.Spec.Labels[k]; !ok || got != v {
					return fmt.Errorf("ClusterMember %s has labels %v", member, m.Spec.Labels)
				}
			}
			return nil
		})
	})
}
