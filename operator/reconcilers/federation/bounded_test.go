package federation

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// noteRecorder keeps the notes of the events recorded.
type noteRecorder struct{ notes *[]string }

func (n noteRecorder) Eventf(_ runtime.Object, _ runtime.Object, _, _, _, note string, args ...any) {
	*n.notes = append(*n.notes, fmt.Sprintf(note, args...))
}

// The Federation reconcile at ClusterMesh's limit, 511 members with 32-character names, with
// every check failing at once and for every member (one cluster ID, one pod CIDR and one
// overlay endpoint for all, as a roster written from one template would have them, and 100
// more names that are too long and have no ClusterMember): every condition stays within the
// API's 32 KiB, every event note within the Events API's 1 KiB, and the Federation within
// 256 KiB.
func TestReconciler_Federation_BoundedAt511Members(t *testing.T) {
	const maxCondition, maxNote, maxObject = 32 * 1024, 1024, 256 * 1024
	g := NewWithT(t)
	scheme := runtime.NewScheme()
	g.Expect(clientgoscheme.AddToScheme(scheme)).To(Succeed())
	g.Expect(polykubev1alpha1.AddToScheme(scheme)).To(Succeed())

	fed := &polykubev1alpha1.Federation{ObjectMeta: metav1.ObjectMeta{Name: "fleet", Generation: 1}}
	objs := []client.Object{fed}
	for i := range 511 {
		name := fmt.Sprintf("member-%03d-abcdefghijklmnopqrstu", i)
		g.Expect(name).To(HaveLen(32))
		m := member(name, 0, "10.0.0.0/16")
		m.Spec.Network = polykubev1alpha1.NetworkOverlay{Type: "netmaker", Endpoint: "gateway.example.com:51820"}
		objs = append(objs, &m)
		fed.Spec.Members = append(fed.Spec.Members, name)
	}
	for i := range 100 {
		fed.Spec.Members = append(fed.Spec.Members, fmt.Sprintf("absent-%03d-%s", i, strings.Repeat("x", 52)))
	}
	local := fed.Spec.Members[0]
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithStatusSubresource(&polykubev1alpha1.Federation{}, &polykubev1alpha1.ClusterMember{}).
		WithObjects(objs...).Build()
	var notes []string
	r := &Reconciler{Client: c, Scheme: scheme, ClusterName: local, Recorder: noteRecorder{&notes}}
	_, err := r.Reconcile(context.Background(), ctrl.Request{NamespacedName: client.ObjectKeyFromObject(fed)})
	g.Expect(err).NotTo(HaveOccurred())

	got := &polykubev1alpha1.Federation{}
	g.Expect(c.Get(context.Background(), client.ObjectKeyFromObject(fed), got)).To(Succeed())
	failing := 0
	for _, cond := range got.Status.Conditions {
		if cond.Status != metav1.ConditionTrue {
			failing++
		}
		if len(cond.Message) > maxCondition {
			t.Errorf("condition %s/%s has %d bytes, over %d", cond.Type, cond.Reason, len(cond.Message), maxCondition)
		}
	}
	// Every check but the two about this cluster fails, and Ready with them.
	g.Expect(failing).To(Equal(len(Checks)-2+1), "%v", got.Status.Conditions)
	g.Expect(notes).To(HaveLen(len(Checks) - 2))
	for _, n := range notes {
		if len(n) > maxNote {
			t.Errorf("an event note has %d bytes, over %d: %.160s...", len(n), maxNote, n)
		}
	}
	raw, err := json.Marshal(got)
	g.Expect(err).NotTo(HaveOccurred())
	if len(raw) > maxObject {
		t.Errorf("the Federation is %d bytes, over %d", len(raw), maxObject)
	}
	t.Logf("Federation %d bytes; longest condition %d bytes; notes %v", len(raw), longest(got.Status.Conditions), noteLengths(notes))
}

func longest(conds []metav1.Condition) int {
	n := 0
	for _, c := range conds {
		n = max(n, len(c.Message))
	}
	return n
}

func noteLengths(notes []string) []int {
	out := make([]int, 0, len(notes))
	for _, n := range notes {
		out = append(out, len(n))
	}
	return out
}
