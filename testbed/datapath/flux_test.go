package datapath

import (
	"context"
	"testing"

	"github.com/fluxcd/pkg/apis/meta"
	sourcev1 "github.com/fluxcd/source-controller/api/v1"
	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// A Kustomization that waits on its source says only that; the wait's message carries what the
// GitRepository itself says, so a Git server the pods cannot reach is named as the reason.
func TestSourceSays(t *testing.T) {
	g := NewWithT(t)
	ctx := context.Background()

	cl := fake.NewClientBuilder().WithScheme(Scheme).Build()
	g.Expect(sourceSays(ctx, cl)).To(ContainSubstring("cannot be read"))

	repo := &sourcev1.GitRepository{ObjectMeta: metav1.ObjectMeta{Namespace: FluxNamespace, Name: FluxObjectName}}
	cl = fake.NewClientBuilder().WithScheme(Scheme).WithObjects(repo).Build()
	g.Expect(sourceSays(ctx, cl)).To(ContainSubstring("has not reported yet"))

	repo.Status.Conditions = []metav1.Condition{{Type: meta.ReadyCondition, Status: metav1.ConditionFalse, Reason: "GitOperationFailed",
		Message: "failed to checkout and determine revision: unable to clone 'http://172.18.0.1:39999/polykube/gitops.git': dial tcp 172.18.0.1:39999: i/o timeout"}}
	cl = fake.NewClientBuilder().WithScheme(Scheme).WithObjects(repo).WithStatusSubresource(repo).Build()
	g.Expect(sourceSays(ctx, cl)).To(And(ContainSubstring("is not Ready: GitOperationFailed"), ContainSubstring("i/o timeout")))

	repo.Status.Conditions[0].Status = metav1.ConditionTrue
	cl = fake.NewClientBuilder().WithScheme(Scheme).WithObjects(repo).WithStatusSubresource(repo).Build()
	g.Expect(sourceSays(ctx, cl)).To(BeEmpty())
}
