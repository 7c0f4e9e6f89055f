package soak

import (
	"fmt"
	"maps"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/placement"
	"github.com/polykube/polykube/testbed/gitrepo"
	"github.com/polykube/polykube/testbed/topology"
)

// The objects the soak commits to Git, in their own namespace.
const (
	Namespace    = "soak"
	StaticName   = "soak-static"
	WeightedName = "soak-weighted"
	SelectedName = "soak-selected"
	BoundName    = "soak-bound"
	SecretName   = "soak-db"
	// GroupLabel is the ClusterMember label SelectedName selects on; relabel steps flip it.
	GroupLabel = "soak.polykube.kismet.io/group"
	gitDir     = gitrepo.WorkloadsDir + "/soak"
)

// Workloads are the names of the soak's Workloads, one per way of distributing.
var Workloads = []string{StaticName, WeightedName, SelectedName, BoundName}

// Fleet is the desired state the soak has committed: the roster's group labels and the
// weighted Workload's total. Everything else is fixed for the run.
type Fleet struct {
	top     *topology.Topology
	inGroup map[string]bool
	total   int32
}

// NewFleet is the initial desired state: every cluster but the last in the group, a total of 6.
func NewFleet(top *topology.Topology) *Fleet {
	f := &Fleet{top: top, inGroup: map[string]bool{}, total: 6}
	names := top.ClusterNames()
	for i, c := range names {
		f.inGroup[c] = i < len(names)-1 || len(names) == 1
	}
	return f
}

// Clone copies the fleet (the soak keeps the state before a step beside the one after).
func (f *Fleet) Clone() *Fleet {
	return &Fleet{top: f.top, inGroup: maps.Clone(f.inGroup), total: f.total}
}

// Apply changes the desired state by an edit step. A relabel that would leave the group empty
// is kept as a no-op (a selector that matches nothing changes nothing, which the walk need not
// exercise at every turn); it reports whether anything changed.
func (f *Fleet) Apply(s Step) bool {
	switch s.Kind {
	case StepScale:
		changed := f.total != s.Total
		f.total = s.Total
		return changed
	case StepRelabel:
		if f.inGroup[s.Cluster] && f.groupSize() == 1 {
			return false
		}
		f.inGroup[s.Cluster] = !f.inGroup[s.Cluster]
		return true
	}
	return false
}

func (f *Fleet) groupSize() int {
	n := 0
	for _, in := range f.inGroup {
		if in {
			n++
		}
	}
	return n
}

// Roster is the ClusterMembers of the desired state.
func (f *Fleet) Roster() []polykubev1alpha1.ClusterMember {
	var out []polykubev1alpha1.ClusterMember
	for _, c := range f.top.Clusters {
		out = append(out, polykubev1alpha1.ClusterMember{
			ObjectMeta: metav1.ObjectMeta{Name: c.Name},
			Spec:       polykubev1alpha1.ClusterMemberSpec{Provider: c.Provider, Region: c.Region, Zone: c.Zone, Labels: f.labels(c)},
		})
	}
	return out
}

func (f *Fleet) labels(c topology.Cluster) map[string]string {
	l := maps.Clone(c.Labels)
	if l == nil {
		l = map[string]string{}
	}
	l[GroupLabel] = "out"
	if f.inGroup[c.Name] {
		l[GroupLabel] = "in"
	}
	return l
}

// Workload is the desired Workload of the name.
func (f *Fleet) Workload(name string) *polykubev1alpha1.Workload {
	names := f.top.ClusterNames()
	w := &polykubev1alpha1.Workload{
		TypeMeta:   metav1.TypeMeta{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload"},
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: Namespace},
		Spec: polykubev1alpha1.WorkloadSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "app", Image: "registry.invalid/soak/" + name + ":1"}},
		}}},
	}
	d := &w.Spec.Distribution
	switch name {
	case StaticName:
		d.Strategy = polykubev1alpha1.StrategyStatic
		for i, c := range names[:min(2, len(names))] {
			d.Targets = append(d.Targets, polykubev1alpha1.DistributionTarget{ClusterRef: c, Replicas: ptr.To(int32(2 - i))})
		}
	case WeightedName:
		d.Strategy, d.Replicas = polykubev1alpha1.StrategyMultiCloudWeighted, ptr.To(f.total)
		for i, c := range names {
			d.Targets = append(d.Targets, polykubev1alpha1.DistributionTarget{ClusterRef: c, Weight: ptr.To(int32(1 + i%2))})
		}
	case SelectedName:
		d.Strategy = polykubev1alpha1.StrategyStatic
		d.TargetSelectors = []polykubev1alpha1.TargetSelector{{
			LabelSelector: metav1.LabelSelector{MatchLabels: map[string]string{GroupLabel: "in"}}, Replicas: ptr.To(int32(2)),
		}}
	case BoundName:
		d.Strategy = polykubev1alpha1.StrategyStatic
		for _, c := range names {
			d.Targets = append(d.Targets, polykubev1alpha1.DistributionTarget{ClusterRef: c, Replicas: ptr.To(int32(1))})
		}
	}
	return w
}

// Binding is the DatastoreBinding of BoundName to the Secret every cluster holds.
func (f *Fleet) Binding() *polykubev1alpha1.DatastoreBinding {
	return &polykubev1alpha1.DatastoreBinding{
		TypeMeta:   metav1.TypeMeta{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "DatastoreBinding"},
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: Namespace},
		Spec: polykubev1alpha1.DatastoreBindingSpec{
			WorkloadRef: polykubev1alpha1.LocalWorkloadReference{Name: BoundName},
			SecretRef:   polykubev1alpha1.LocalSecretReference{Name: SecretName},
			Env:         []polykubev1alpha1.EnvFromSecretKey{{Name: "DB_HOST", Key: "host"}},
		},
	}
}

// Secret is the Secret the binding reads, created in every cluster (never in Git).
func Secret() *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: SecretName, Namespace: Namespace},
		StringData: map[string]string{"host": "db.soak.invalid"},
	}
}

// Allocation is the replicas the desired state gives the Workload in the cluster, and whether
// the cluster is a target at all.
func (f *Fleet) Allocation(name, cluster string) (int32, bool, error) {
	alloc, err := placement.ForWorkloadIn(f.Workload(name), f.Roster())
	if err != nil {
		return 0, false, fmt.Errorf("allocate %s: %w", name, err)
	}
	n, ok := alloc.For(cluster)
	return n, ok, nil
}

// allocations is every target's replicas for the Workload under the desired state.
func (f *Fleet) allocations(name string) (map[string]int32, error) {
	out := map[string]int32{}
	for _, c := range f.top.ClusterNames() {
		n, ok, err := f.Allocation(name, c)
		if err != nil {
			return nil, err
		}
		if ok {
			out[c] = n
		}
	}
	return out, nil
}

// Files are the Git files of the desired state: the soak's namespace, Workloads and binding,
// and the roster with the group labels.
func (f *Fleet) Files() (map[string][]byte, error) {
	files := map[string][]byte{}
	ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: Namespace}}
	objs := map[string]any{"namespace.yaml": ns, "binding.yaml": f.Binding()}
	for _, name := range Workloads {
		objs[name+".yaml"] = f.Workload(name)
	}
	for file, o := range objs {
		data, err := gitrepo.Manifest(o)
		if err != nil {
			return nil, err
		}
		files[gitDir+"/"+file] = data
	}
	top := *f.top
	top.Clusters = slices.Clone(f.top.Clusters)
	for i := range top.Clusters {
		top.Clusters[i].Labels = f.labels(top.Clusters[i])
	}
	roster, err := gitrepo.RenderRoster(&top)
	if err != nil {
		return nil, err
	}
	files[gitrepo.RosterDir+"/roster.yaml"] = roster
	return files, nil
}

// templateOf is what a Deployment's pods are made from: a change rolls them.
func templateOf(d *appsv1.Deployment) string { return placement.TemplateHash(d.Spec.Template) }
