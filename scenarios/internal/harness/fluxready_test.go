package harness

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func kustomization(status, reason, message string) *unstructured.Unstructured {
	ks := &unstructured.Unstructured{}
	ks.SetGroupVersionKind(kustomizationGVK)
	ks.SetNamespace(fluxKey.Namespace)
	ks.SetName(fluxKey.Name)
	_ = unstructured.SetNestedSlice(ks.Object, []any{map[string]any{"type": "Ready", "status": status, "reason": reason, "message": message}}, "status", "conditions")
	return ks
}

// A commit that never arrives names why: the Kustomization's own message.
func TestFluxNotReady_NamesTheKustomizationsMessage(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()
	refused := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).
		WithObjects(kustomization("False", "ReconciliationFailed", "Workload/pk-1/web dry-run failed (Invalid): returnAfter must be at least detectAfter")).Build()
	g.Expect(fluxNotReady(ctx, refused)).To(Equal(" (Flux Kustomization flux-system/polykube is not Ready: ReconciliationFailed: Workload/pk-1/web dry-run failed (Invalid): returnAfter must be at least detectAfter)"))

	ready := fake.NewClientBuilder().WithScheme(runtime.NewScheme()).WithObjects(kustomization("True", "ReconciliationSucceeded", "Applied")).Build()
	g.Expect(fluxNotReady(ctx, ready)).To(BeEmpty())
	g.Expect(fluxNotReady(ctx, fake.NewClientBuilder().WithScheme(runtime.NewScheme()).Build())).To(BeEmpty(), "unreadable: nothing to add")
}
