package statusfinal_test

import (
	"context"
	"errors"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/rectest"
	"github.com/polykube/polykube/operator/internal/statusfinal"
)

var env rectest.Env

func TestMain(m *testing.M) { rectest.Main(m, &env) }

func newClient(t *testing.T) client.Client {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := polykubev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c, err := client.New(env.Start(t), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func member(name string) *polykubev1alpha1.ClusterMember {
	return &polykubev1alpha1.ClusterMember{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: polykubev1alpha1.ClusterMemberSpec{Provider: "kwok",
			Mesh: polykubev1alpha1.ClusterMeshSettings{ClusterID: 9, PodCIDRs: []string{"10.9.0.0/16"}}},
	}
}

func setReady(obj *polykubev1alpha1.ClusterMember, status metav1.ConditionStatus, reason string) {
	meta.SetStatusCondition(&obj.Status.Conditions, metav1.Condition{Type: polykubev1alpha1.ReadyCondition, Status: status, Reason: reason, Message: reason + " message"})
}

func readyOnServer(g Gomega, c client.Client, name string) *metav1.Condition {
	got := &polykubev1alpha1.ClusterMember{}
	g.Expect(c.Get(context.Background(), client.ObjectKey{Name: name}, got)).To(Succeed())
	return meta.FindStatusCondition(got.Status.Conditions, polykubev1alpha1.ReadyCondition)
}

// TestFinalize_Policy walks one object through the policy's cases on a real API server.
func TestFinalize_Policy(t *testing.T) {
	g := NewWithT(t)
	c := newClient(t)
	ctx := ctrl.LoggerInto(context.Background(), ctrl.Log)
	rectest.Create(t, c, member("policy"))
	rec := events.NewFakeRecorder(10)
	f := &statusfinal.Finalizer{Client: c, Recorder: rec, Kind: "ClusterMember", Action: "Test"}
	fetch := func() *polykubev1alpha1.ClusterMember {
		m := &polykubev1alpha1.ClusterMember{}
		g.Expect(c.Get(ctx, client.ObjectKey{Name: "policy"}, m)).To(Succeed())
		return m
	}

	// A change is written, and the Ready transition is an event with the condition's reason.
	m := fetch()
	before := m.DeepCopy()
	setReady(m, metav1.ConditionFalse, "SomethingMissing")
	res, err := f.Finalize(ctx, before, m, ctrl.Result{}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{}))
	g.Expect(readyOnServer(g, c, "policy").Reason).To(Equal("SomethingMissing"))
	g.Expect(rec.Events).To(Receive(Equal("Warning SomethingMissing SomethingMissing message")))
	afterFirst := fetch()

	// Nothing changed: no write, no event.
	same := afterFirst.DeepCopy()
	res, err = f.Finalize(ctx, afterFirst.DeepCopy(), same, ctrl.Result{}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res).To(Equal(ctrl.Result{}))
	g.Expect(same.ResourceVersion).To(Equal(afterFirst.ResourceVersion))
	g.Expect(rec.Events).NotTo(Receive())

	// Someone else changes the object: a status computed from the older copy is refused, the
	// object is requeued, the error is not reported and no event is recorded.
	other := afterFirst.DeepCopy()
	other.Labels = map[string]string{"touched": "yes"}
	g.Expect(c.Update(ctx, other)).To(Succeed())
	stale := afterFirst.DeepCopy()
	setReady(stale, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
	res, err = f.Finalize(ctx, afterFirst.DeepCopy(), stale, ctrl.Result{}, reconcile.TerminalError(errors.New("invalid")))
	g.Expect(err).NotTo(HaveOccurred(), "a refused write is retried, even after a terminal error")
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0))
	g.Expect(readyOnServer(g, c, "policy").Reason).To(Equal("SomethingMissing"))
	g.Expect(rec.Events).NotTo(Receive())

	// A fresh copy is written; then a copy older than that write is not trusted even when its
	// status equals what is computed (A→B→A under a lagging cache).
	fresh := fetch()
	atA := fresh.DeepCopy()
	setReady(fresh, metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded)
	_, err = f.Finalize(ctx, atA.DeepCopy(), fresh, ctrl.Result{}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(rec.Events).To(Receive(Equal("Normal Succeeded Succeeded message")))
	res, err = f.Finalize(ctx, atA.DeepCopy(), atA.DeepCopy(), ctrl.Result{}, nil)
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(res.RequeueAfter).To(BeNumerically(">", 0), "a copy older than the last write is retried")
	g.Expect(f.Behind(fetch())).To(BeFalse(), "a copy that shows the last write is trusted")

	// A non-terminal error is recorded as Ready=False/ReconcileFailed and returned.
	cur := fetch()
	res, err = f.Finalize(ctx, cur.DeepCopy(), cur, ctrl.Result{}, errors.New("list things: connection refused"))
	g.Expect(err).To(MatchError(ContainSubstring("connection refused")))
	ready := readyOnServer(g, c, "policy")
	g.Expect(ready.Reason).To(Equal(polykubev1alpha1.ReasonReconcileFailed))
	g.Expect(ready.Message).To(ContainSubstring("connection refused"))
	g.Expect(rec.Events).To(Receive(Equal("Warning ReconcileFailed list things: connection refused")))
}
