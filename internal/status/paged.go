package status

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// DefaultPageSize is how many objects one list request asks for: kubectl's default chunk size.
// A cluster's 1,000 Workloads at C = 50 are about 7 MB of JSON; read in pages of 500, only two
// pages are decoded at a time (the one being reduced, the next one arriving).
const DefaultPageSize = 500

// pagedLister lists through client-go's pager: a page at a time, each item handed to keep as
// soon as its page is decoded, so that the snapshot holds the reduced objects only and the
// page is garbage before the one after the next arrives.
type pagedLister struct {
	r        Reader
	pageSize int64
}

// each lists what newList holds, page by page, and calls keep with every item. An item is only
// valid during the call: keep copies what it keeps. When the server has forgotten the list's
// continue token between two pages (410 Expired, the list took longer than etcd's compaction
// interval), reset drops what was kept and the list is read again whole, as kubectl does.
func (l pagedLister) each(ctx context.Context, newList func() client.ObjectList, opts []client.ListOption, keep func(runtime.Object), reset func()) error {
	size := l.pageSize
	if size <= 0 {
		size = DefaultPageSize
	}
	page := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		list := newList()
		pageOpts := append(append([]client.ListOption(nil), opts...), client.Limit(o.Limit), client.Continue(o.Continue))
		if err := l.r.List(ctx, list, pageOpts...); err != nil {
			return nil, err
		}
		return list, nil
	}
	p := pager.New(page)
	p.PageSize = size
	// No pages read ahead beyond the one arriving while the last one is reduced.
	p.PageBufferSize = 0
	each := func(o runtime.Object) error { keep(o); return nil }
	err := p.EachListItem(ctx, metav1.ListOptions{}, each)
	if err == nil || !apierrors.IsResourceExpired(err) {
		return err
	}
	reset()
	whole, err := page(ctx, metav1.ListOptions{})
	if err != nil {
		return err
	}
	return meta.EachListItem(whole, each)
}

// reducedMeta is m without what no view reads and what weighs most: the managed fields and
// kubectl's last-applied copy.
func reducedMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	m.ManagedFields = nil
	if _, ok := m.Annotations[lastApplied]; ok {
		a := make(map[string]string, len(m.Annotations)-1)
		for k, v := range m.Annotations {
			if k != lastApplied {
				a[k] = v
			}
		}
		m.Annotations = a
	}
	return m
}

// reduceWorkload is the copy of w a snapshot keeps: every view reads its spec and status.
func reduceWorkload(w *polykubev1alpha1.Workload) polykubev1alpha1.Workload {
	out := *w
	out.ObjectMeta = reducedMeta(w.ObjectMeta)
	return out
}

// reduceDeployment is what the merge reads of an operator's Deployment: its name and labels
// (which Workload, which cluster), its replicas (spec and status) and the name and image of each
// container (merge_overrides.go compares the images with the effective template).
func reduceDeployment(d *appsv1.Deployment) appsv1.Deployment {
	out := appsv1.Deployment{
		TypeMeta:   d.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{Namespace: d.Namespace, Name: d.Name, Labels: d.Labels, Generation: d.Generation},
		Spec:       appsv1.DeploymentSpec{Replicas: d.Spec.Replicas},
		Status:     appsv1.DeploymentStatus{Replicas: d.Status.Replicas},
	}
	images := func(cs []corev1.Container) []corev1.Container {
		if cs == nil {
			return nil
		}
		out := make([]corev1.Container, len(cs))
		for i, c := range cs {
			out[i] = corev1.Container{Name: c.Name, Image: c.Image}
		}
		return out
	}
	out.Spec.Template.Spec.InitContainers = images(d.Spec.Template.Spec.InitContainers)
	out.Spec.Template.Spec.Containers = images(d.Spec.Template.Spec.Containers)
	return out
}
