package status

import (
	"context"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/pager"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// DefaultPageSize is how many objects one list request asks for: kubectl's default chunk size.
// The Polykube lists are decoded an item at a time as a page arrives (stream.go); a page of
// Deployments is decoded whole and reduced while the next one arrives.
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
