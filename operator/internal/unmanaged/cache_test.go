package unmanaged_test

import (
	"context"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/optest"
	"github.com/polykube/polykube/operator/internal/rectest"
	"github.com/polykube/polykube/operator/internal/unmanaged"
)

var env rectest.Env

func TestMain(m *testing.M) { rectest.Main(m, &env) }

// TestNewCache_HoldsOnlyWhatPolykubeDidNotMake: the API server sends this cache none of
// Polykube's objects (the manager's cache holds those in full), so W Workloads' Deployments cost
// it neither a list entry nor a watch event; one whose label is removed by hand enters it, as an
// object in a Workload's way must.
func TestNewCache_HoldsOnlyWhatPolykubeDidNotMake(t *testing.T) {
	g := NewWithT(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cfg := env.Start(t)
	c, err := client.New(cfg, client.Options{Scheme: rectest.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	ns := optest.Namespace(t, c, "foreign-cache")
	ours := optest.ForeignDeployment(ns, "ours")
	ours.Labels[polykubev1alpha1.ManagedByLabel] = polykubev1alpha1.ManagedByValue
	theirs := optest.ForeignDeployment(ns, "theirs")
	theirs.Labels[polykubev1alpha1.ManagedByLabel] = "Helm"
	for _, d := range []client.Object{ours, theirs, optest.ForeignDeployment(ns, "unlabelled")} {
		g.Expect(c.Create(ctx, d)).To(Succeed())
	}

	others, err := unmanaged.NewCache(cfg, cache.Options{Scheme: rectest.Scheme()})
	g.Expect(err).NotTo(HaveOccurred())
	go func() { _ = others.Start(ctx) }()
	// A read before Start has begun fails (ErrCacheNotStarted): seen in a CI run.
	g.Expect(others.WaitForCacheSync(ctx)).To(BeTrue())
	names := func() []string {
		list := &metav1.PartialObjectMetadataList{}
		list.SetGroupVersionKind(unmanaged.Deployment().GroupVersionKind())
		list.Kind += "List"
		g.Expect(others.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		var out []string
		for _, m := range list.Items {
			out = append(out, m.Name)
		}
		return out
	}
	g.Expect(names()).To(ConsistOf("theirs", "unlabelled"), "Polykube's Deployment is not in the cache of foreign objects")

	patch := client.MergeFrom(ours.DeepCopy())
	delete(ours.Labels, polykubev1alpha1.ManagedByLabel)
	g.Expect(c.Patch(ctx, ours, patch)).To(Succeed())
	g.Eventually(names, 10*time.Second, 50*time.Millisecond).Should(ConsistOf("ours", "theirs", "unlabelled"),
		"a Deployment whose managed-by label was removed is a foreign one")

	svc := optest.ForeignService(ns, "svc")
	svc.Labels[polykubev1alpha1.ManagedByLabel] = polykubev1alpha1.ManagedByValue
	g.Expect(c.Create(ctx, svc)).To(Succeed())
	g.Consistently(func() error {
		return others.Get(ctx, client.ObjectKeyFromObject(svc), unmanaged.Service())
	}, time.Second, 100*time.Millisecond).ShouldNot(Succeed(), "Polykube's Service is not in the cache of foreign objects")
}
