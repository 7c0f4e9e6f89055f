package workload

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/event"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// TestRoster_CopiedOncePerChangeOfTheCache: the roster read from the informer's store is the
// same list while the store holds the same objects, and a new one, with the change, as soon as
// a member is added, replaced by a newer version or removed.
func TestRoster_CopiedOncePerChangeOfTheCache(t *testing.T) {
	g := NewWithT(t)
	store := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	member := func(name, region string) *polykubev1alpha1.ClusterMember {
		return &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: polykubev1alpha1.ClusterMemberSpec{Region: region}}
	}
	g.Expect(store.Add(member("east", "eu"))).To(Succeed())
	g.Expect(store.Add(member("west", "us"))).To(Succeed())
	r := &Reconciler{roster: roster{store: store}}
	ctx := context.Background()
	regions := func(items []polykubev1alpha1.ClusterMember) map[string]string {
		out := map[string]string{}
		for _, m := range items {
			out[m.Name] = m.Spec.Region
		}
		return out
	}

	first, err := r.members(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(regions(first)).To(Equal(map[string]string{"east": "eu", "west": "us"}))
	again, err := r.members(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(&again[0]).To(BeIdenticalTo(&first[0]), "the same objects: the list is not copied again")

	g.Expect(store.Update(member("west", "ap"))).To(Succeed(), "a newer version, as many members")
	updated, err := r.members(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(regions(updated)).To(Equal(map[string]string{"east": "eu", "west": "ap"}))

	g.Expect(store.Add(member("north", "eu"))).To(Succeed())
	added, err := r.members(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(regions(added)).To(HaveLen(3))

	g.Expect(store.Delete(member("east", ""))).To(Succeed())
	g.Expect(store.Delete(member("north", ""))).To(Succeed())
	g.Expect(store.Add(member("south", "af"))).To(Succeed())
	g.Expect(store.Add(member("east", "eu"))).To(Succeed(), "back with the count it had, but new objects")
	swapped, err := r.members(ctx)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(regions(swapped)).To(Equal(map[string]string{"east": "eu", "west": "ap", "south": "af"}))
	g.Expect(regions(updated)).To(Equal(map[string]string{"east": "eu", "west": "ap"}), "a list handed out is never changed")
}

// TestNotInInitialList: a peer's slice in the cache's initial list reconciles nothing (every
// Workload is reconciled on start-up); one created later, or changed, does.
func TestNotInInitialList(t *testing.T) {
	g := NewWithT(t)
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "shop", Name: "api-beta"}}
	g.Expect(notInInitialList.Create(event.CreateEvent{Object: s, IsInInitialList: true})).To(BeFalse())
	g.Expect(notInInitialList.Create(event.CreateEvent{Object: s})).To(BeTrue())
	g.Expect(notInInitialList.Update(event.UpdateEvent{ObjectOld: s, ObjectNew: s})).To(BeTrue())
	g.Expect(notInInitialList.Delete(event.DeleteEvent{Object: s})).To(BeTrue())
}
