package rectest

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Scheme holds Kubernetes' built-in kinds and Polykube's, for fake clients.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	if err := polykubev1alpha1.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// OwnMemberTerminating is the roster and Workload a reconciler of cluster "alpha" sees while
// alpha's own ClusterMember is being deleted (a finalizer holds it): alpha terminating and beta,
// both labelled region=eu, and a static Workload ns/name giving region=eu 2 replicas by label.
// Placement leaves alpha out of what the labels select, though the Workload still runs there.
func OwnMemberTerminating(ns, name string) (alpha, beta *polykubev1alpha1.ClusterMember, wl *polykubev1alpha1.Workload) {
	eu := map[string]string{"region": "eu"}
	member := func(name string) *polykubev1alpha1.ClusterMember {
		return &polykubev1alpha1.ClusterMember{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: polykubev1alpha1.ClusterMemberSpec{Labels: eu}}
	}
	alpha, beta = member("alpha"), member("beta")
	alpha.Finalizers = []string{"example.com/hold"}
	alpha.DeletionTimestamp = ptr.To(metav1.NewTime(time.Date(2026, 12, 7, 1, 0, 0, 0, time.UTC)))
	wl = &polykubev1alpha1.Workload{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: polykubev1alpha1.WorkloadSpec{Distribution: polykubev1alpha1.Distribution{
			Strategy: polykubev1alpha1.StrategyStatic,
			TargetSelectors: []polykubev1alpha1.TargetSelector{{
				LabelSelector: metav1.LabelSelector{MatchLabels: eu}, Replicas: ptr.To[int32](2),
			}},
		}},
	}
	return alpha, beta, wl
}
