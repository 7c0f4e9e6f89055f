package status

import (
	"sync"
	"unique"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// The compact form of a cluster's Workloads and Deployments, which the merge reads.
//
// At C = 50 and W = 1,000 the fleet holds 50,000 copies of Workloads and as many Deployments,
// and every one must be kept until the last cluster has answered. As full objects (a Workload
// is 1.4 KB before its slices and maps, a Deployment 1.2 KB) they were most of the memory of a
// run. Here a copy keeps its reduced metadata, its status and a pointer to its spec, and the
// specs are shared: the clusters of a fleet hold the same spec of a Workload (Flux applies the
// same manifest everywhere), so a spec whose JSON equals one already read is that one, decoded
// once. A Deployment keeps the few fields the merge reads. The merge makes a full Workload of a
// copy only while it builds that Workload's row.

// reducedObjects are the Workloads and Deployments of one cluster in compact form.
type reducedObjects struct {
	workloads   []workloadCopy
	deployments []deploymentCopy
}

// workloadCopy is one cluster's copy of a Workload. spec may be shared with other copies: it
// is never changed.
type workloadCopy struct {
	meta   metav1.ObjectMeta
	spec   *polykubev1alpha1.WorkloadSpec
	status polykubev1alpha1.WorkloadStatus
}

var workloadTypeMeta = metav1.TypeMeta{APIVersion: polykubev1alpha1.GroupVersion.String(), Kind: "Workload"}

// workload is the copy as the merge reads it; its spec's slices and maps are shared.
func (c *workloadCopy) workload() polykubev1alpha1.Workload {
	return polykubev1alpha1.Workload{TypeMeta: workloadTypeMeta, ObjectMeta: c.meta, Spec: *c.spec, Status: c.status}
}

// deploymentCopy is what the merge reads of an operator's Deployment: its name and labels (which
// Workload, which cluster), its replicas (spec and status) and the name and image of each
// container (merge_overrides.go compares the images with the effective template).
type deploymentCopy struct {
	namespace, name string
	labels          map[string]string
	generation      int64
	replicas        *int32
	statusReplicas  int32
	// initContainers and containers hold the name and image of each container only, and are
	// shared between the clusters whose Deployments run the same ones.
	initContainers, containers []corev1.Container
	typeMeta                   metav1.TypeMeta
}

func (c *deploymentCopy) deployment() appsv1.Deployment {
	d := appsv1.Deployment{
		TypeMeta:   c.typeMeta,
		ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.name, Labels: c.labels, Generation: c.generation},
		Spec:       appsv1.DeploymentSpec{Replicas: c.replicas},
		Status:     appsv1.DeploymentStatus{Replicas: c.statusReplicas},
	}
	d.Spec.Template.Spec.InitContainers = c.initContainers
	d.Spec.Template.Spec.Containers = c.containers
	return d
}

// reducedOf is the compact form of the objects of a snapshot a caller made itself (tests,
// Merge's callers): nothing is shared, nothing is copied but the small structs.
func reducedOf(s *Snapshot) *reducedObjects {
	r := &reducedObjects{
		workloads:   make([]workloadCopy, len(s.Workloads)),
		deployments: make([]deploymentCopy, len(s.Deployments)),
	}
	for i := range s.Workloads {
		w := &s.Workloads[i]
		r.workloads[i] = workloadCopy{meta: w.ObjectMeta, spec: &w.Spec, status: w.Status}
	}
	for i := range s.Deployments {
		r.deployments[i] = deploymentCopyOf(&s.Deployments[i], nil)
	}
	return r
}

// expand fills the snapshot's Workloads and Deployments from r: Collect's result, whose
// callers read the full types.
func (r *reducedObjects) expand(s *Snapshot) {
	if r == nil {
		return
	}
	if len(r.workloads) > 0 {
		s.Workloads = make([]polykubev1alpha1.Workload, len(r.workloads))
		for i := range r.workloads {
			s.Workloads[i] = r.workloads[i].workload()
		}
	}
	if len(r.deployments) > 0 {
		s.Deployments = make([]appsv1.Deployment, len(r.deployments))
		for i := range r.deployments {
			s.Deployments[i] = r.deployments[i].deployment()
		}
	}
}

// deploymentCopyOf reduces d to a deploymentCopy; with a sharer, its container lists and
// strings are shared with the equal ones of other clusters.
func deploymentCopyOf(d *appsv1.Deployment, sh *sharer) deploymentCopy {
	out := deploymentCopy{
		namespace: sh.str(d.Namespace), name: sh.str(d.Name), generation: d.Generation,
		replicas: d.Spec.Replicas, statusReplicas: d.Status.Replicas, typeMeta: d.TypeMeta,
	}
	if d.Labels != nil {
		out.labels = make(map[string]string, len(d.Labels))
		for k, v := range d.Labels {
			out.labels[sh.str(k)] = sh.str(v)
		}
	}
	out.initContainers = sh.containers(d.Spec.Template.Spec.InitContainers)
	out.containers = sh.containers(d.Spec.Template.Spec.Containers)
	return out
}

// sharer keeps one copy of what the clusters of a fleet have in common: Workload specs (by
// their JSON), container lists and strings. It is safe for concurrent use; a nil sharer shares
// nothing.
type sharer struct {
	mu    sync.Mutex
	specs map[string]*polykubev1alpha1.WorkloadSpec
	lists map[string][]corev1.Container
}

func newSharer() *sharer {
	return &sharer{specs: map[string]*polykubev1alpha1.WorkloadSpec{}, lists: map[string][]corev1.Container{}}
}

// spec is the shared spec whose JSON is raw, decoded by decode when none was read yet.
func (sh *sharer) spec(raw []byte, decode func(*polykubev1alpha1.WorkloadSpec) error) (*polykubev1alpha1.WorkloadSpec, error) {
	if sh == nil {
		s := &polykubev1alpha1.WorkloadSpec{}
		return s, decode(s)
	}
	key := trimmed(raw)
	sh.mu.Lock()
	s, ok := sh.specs[string(key)]
	sh.mu.Unlock()
	if ok {
		return s, nil
	}
	s = &polykubev1alpha1.WorkloadSpec{}
	if err := decode(s); err != nil {
		return nil, err
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if prev, ok := sh.specs[string(key)]; ok {
		return prev, nil
	}
	sh.specs[string(key)] = s
	return s, nil
}

// containers is the name and image of each container of cs, shared with equal lists.
func (sh *sharer) containers(cs []corev1.Container) []corev1.Container {
	if cs == nil {
		return nil
	}
	if sh == nil {
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{Name: c.Name, Image: c.Image}
		}
		return out
	}
	var key []byte
	for _, c := range cs {
		key = append(append(append(append(key, c.Name...), 0), c.Image...), 0)
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	if out, ok := sh.lists[string(key)]; ok {
		return out
	}
	out := make([]corev1.Container, len(cs))
	for i, c := range cs {
		out[i] = corev1.Container{Name: c.Name, Image: c.Image}
	}
	sh.lists[string(key)] = out
	return out
}

// str is s, as one shared copy of the string.
func (sh *sharer) str(s string) string {
	if sh == nil {
		return s
	}
	return unique.Make(s).Value()
}
