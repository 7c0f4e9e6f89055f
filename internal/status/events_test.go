package status_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/status"
	"github.com/polykube/polykube/internal/status/fleettest"
)

// event creates a core/v1 Event about the object (apiVersion, kind, name) in namespace shop,
// last seen at.
func event(ctx context.Context, t *testing.T, c *fleettest.Cluster, name, apiVersion, kind, obj, typ, reason, msg string, at time.Time) {
	t.Helper()
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: "shop", Name: name},
		InvolvedObject: corev1.ObjectReference{APIVersion: apiVersion, Kind: kind, Namespace: "shop", Name: obj},
		Type:           typ, Reason: reason, Message: msg, Count: 1,
		FirstTimestamp: metav1.NewTime(at), LastTimestamp: metav1.NewTime(at),
		Source: corev1.EventSource{Component: "polykube-operator"},
	}
	if err := c.Admin.Create(ctx, e); err != nil {
		t.Fatalf("create event %s in %s: %v", name, c.Name, err)
	}
}

// TestCollectEvents_MergesPolykubeEventsByTime: the events about Polykube objects and the
// Deployments Polykube manages, from two clusters, come out in one timeline with their
// cluster; events about other objects and those older than --since do not; a dead context is
// reported and the rest still shown.
func TestCollectEvents_MergesPolykubeEventsByTime(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	f := fleettest.Start(t, "alpha", "beta")
	t.Cleanup(f.Stop)
	alpha, beta := f.Cluster("alpha"), f.Cluster("beta")
	f.Namespace(ctx, t, "shop")
	alpha.CreateDeployment(ctx, t, "shop", "web", 1)
	now := time.Now().UTC().Truncate(time.Second)
	pk := polykubev1alpha1.GroupVersion.String()
	event(ctx, t, alpha, "e1", pk, "Workload", "web", corev1.EventTypeNormal, "Progressing", "rolling out 2 replicas", now.Add(-3*time.Minute))
	event(ctx, t, beta, "e2", pk, "Workload", "web", corev1.EventTypeWarning, "ReconcileFailed", "cannot create Deployment", now.Add(-2*time.Minute))
	event(ctx, t, alpha, "e3", "apps/v1", "Deployment", "web", corev1.EventTypeNormal, "ScalingReplicaSet", "Scaled up replica set web-1 to 1", now.Add(-time.Minute))
	event(ctx, t, alpha, "e4", "apps/v1", "Deployment", "not-ours", corev1.EventTypeNormal, "ScalingReplicaSet", "someone else's", now.Add(-time.Minute))
	event(ctx, t, beta, "e5", pk, "ServiceEndpoint", "web", corev1.EventTypeWarning, "Conflict", "too old for --since", now.Add(-3*time.Hour))
	f.AddContext("dead", &rest.Config{Host: "https://" + deadAddr(t)})
	kc := f.Kubeconfig(t)
	targets, err := status.ResolveTargets(status.ContextSelection{Kubeconfig: kc, Contexts: []string{"ctx-alpha", "ctx-beta", "dead"}})
	g.Expect(err).NotTo(HaveOccurred())

	ev := status.CollectEvents(ctx, targets, status.EventsQuery{Namespace: "shop", Since: time.Hour, Timeout: 5 * time.Second, Now: now})
	var got []string
	for _, e := range ev.Events {
		got = append(got, e.Cluster+" "+e.Reason+" "+e.Object)
	}
	g.Expect(got).To(Equal([]string{
		"ctx-alpha Progressing Workload shop/web",
		"ctx-beta ReconcileFailed Workload shop/web",
		"ctx-alpha ScalingReplicaSet Deployment shop/web",
	}))
	g.Expect(ev.Clusters[2].Reason).To(Equal(status.ReasonUnreachable))
	g.Expect(ev.ExitCode).To(Equal(status.ExitUnreachable))

	var table bytes.Buffer
	g.Expect(status.PrintEvents(&table, ev, status.FormatTable, status.PrintOptions{})).To(Succeed())
	g.Expect(table.String()).To(MatchRegexp(`ctx-beta\s+Warning\s+ReconcileFailed\s+Workload shop/web\s+1\s+cannot create Deployment`))
	g.Expect(table.String()).To(ContainSubstring("CONTEXT NOT READ"))
}
