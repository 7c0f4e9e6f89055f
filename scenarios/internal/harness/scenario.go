package harness

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Suite is what every scenario shares: the configuration, the federation and its clients.
type Suite struct {
	Config  *Config
	Fed     Federation
	Clients *Clients
	// readers caches the status-reader identity per cluster.
	readers readerCache
	// retired are ended scenarios whose Git directories are still to be removed, or whose
	// namespaces are still to be deleted.
	retired retiredScenarios
	// sharedRelease is the release the install scenarios share (registryinstall.go).
	sharedRelease sharedRelease
}

// retiredScenarios defers the clean-up of scenarios that committed to Git. Removing a
// scenario's directory in a commit of its own would cost every cluster one more Flux apply
// per scenario, the largest part of a scenario's time; so the next commit of any scenario
// removes it, and the namespace is deleted once every cluster has applied that commit and
// pruned what was in it. (Deleting the namespace first would leave Flux re-applying the
// files into a terminating namespace, failing until the removal arrived.) The retired
// namespaces are never looked at: every step reads its own scenario's namespace only.
type retiredScenarios struct {
	mu sync.Mutex
	// commits counts the scenarios' commits.
	commits int
	entries []retired
}

type retired struct {
	dir, namespace string
	// removedBy is the number of the commit that removed dir; 0 while it is still in Git.
	removedBy int
}

// retire queues an ended scenario's clean-up.
func (r *retiredScenarios) retire(dir, namespace string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.entries = append(r.entries, retired{dir: dir, namespace: namespace})
}

// commit runs do, which makes the next commit, with the retired directories added to its
// removals, records that they were removed by it and returns its number. Commits are
// serialised here.
func (r *retiredScenarios) commit(do func(remove []string) error) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.commits + 1
	var remove []string
	for _, e := range r.entries {
		if e.removedBy == 0 {
			remove = append(remove, e.dir)
		}
	}
	if err := do(remove); err != nil {
		return 0, err
	}
	r.commits = n
	for i := range r.entries {
		if r.entries[i].removedBy == 0 {
			r.entries[i].removedBy = n
		}
	}
	return n, nil
}

// pruned returns, and forgets, the namespaces whose directories were removed by commit n or
// an earlier one: once every cluster applied commit n, Flux has pruned their objects.
func (r *retiredScenarios) pruned(n int) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	keep := r.entries[:0]
	for _, e := range r.entries {
		if e.removedBy != 0 && e.removedBy <= n {
			out = append(out, e.namespace)
		} else {
			keep = append(keep, e)
		}
	}
	r.entries = keep
	return out
}

// NewSuite wraps a running federation.
func NewSuite(cfg *Config, fed Federation) *Suite {
	return &Suite{Config: cfg, Fed: fed, Clients: NewClients(fed), readers: readerCache{cfg: map[string]*rest.Config{}}}
}

// Scenario is the state of one running scenario. Steps find it in their context.Context;
// nothing in it is shared with another scenario.
type Scenario struct {
	*Suite
	Name string
	// Namespace is the scenario's own namespace, the same in every cluster.
	Namespace string
	// Workloads are the specs the scenario built, by name, as last committed or applied.
	Workloads map[string]*polykubev1alpha1.Workload
	// heal undoes what the scenario changed (faults, deletions), last first, at teardown.
	heal []namedAction
	// clusterScoped are the cluster-scoped objects the scenario applied, to delete afterwards.
	clusterScoped []*unstructured.Unstructured

	// The scenario's state by domain, each beside the steps that use it.
	gitState                // what it committed (git.go)
	faults       faultState // the faults in effect (faults.go)
	meshState               // what the mesh last showed (mesh.go)
	mistakeState            // the operator mistakes it made (mistakes.go)
	timeline                // when things happened (failover.go)
	observed                // what it saw and remembered of the clusters (objects.go)
	// upgrade is the upgrade scenario's operators and recorded fleet (upgrade.go).
	upgrade *upgrade
	// registryRelease is the release the registry scenario published.
	registryRelease *registryRelease
}

type namedAction struct {
	name string
	do   func(context.Context) error
}

// NewScenario starts a scenario with a fresh namespace name.
func (s *Suite) NewScenario(name string) *Scenario {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return &Scenario{
		Suite:     s,
		Name:      name,
		Namespace: "pk-" + hex.EncodeToString(b),
		Workloads: map[string]*polykubev1alpha1.Workload{},
		gitState:  gitState{gitFiles: map[string][]byte{}},
		observed:  observed{before: map[string]ObjectSnapshot{}, deployments: map[string]*deploymentHistory{}},
	}
}

// Setup creates the scenario's namespace in every cluster.
func (sc *Scenario) Setup(ctx context.Context) error {
	for _, cl := range sc.Fed.Clusters() {
		c, err := sc.Clients.Admin(cl)
		if err != nil {
			return err
		}
		ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: sc.Namespace, Labels: map[string]string{"polykube.kismet.io/scenario": "true"}}}
		if err := c.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("create namespace %s in cluster %q: %w", sc.Namespace, cl, err)
		}
	}
	return nil
}

// OnTeardown registers an action that heals a fault; Teardown runs them last first.
func (sc *Scenario) OnTeardown(name string, do func(context.Context) error) {
	sc.heal = append(sc.heal, namedAction{name, do})
}

// Teardown heals every fault the scenario injected, removes what it committed to Git, and
// deletes its namespace and cluster-scoped objects in every cluster. It does the whole job and
// reports everything that failed.
func (sc *Scenario) Teardown(ctx context.Context) error {
	var errs []error
	for i := len(sc.heal) - 1; i >= 0; i-- {
		if err := sc.heal[i].do(ctx); err != nil {
			errs = append(errs, fmt.Errorf("heal %s: %w", sc.heal[i].name, err))
		}
	}
	sc.heal = nil
	// A scenario that committed to Git leaves its directory and namespace to the next
	// commit (see retiredScenarios); the others' namespaces go now.
	keepNamespace := len(sc.gitFiles) > 0
	if keepNamespace {
		sc.retired.retire(sc.gitDir(), sc.Namespace)
		sc.gitFiles = map[string][]byte{}
	}
	for _, cl := range sc.Fed.Clusters() {
		c, err := sc.Clients.Admin(cl)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, u := range sc.clusterScoped {
			if err := c.Delete(ctx, u.DeepCopy()); err != nil && !apierrors.IsNotFound(err) {
				errs = append(errs, fmt.Errorf("delete %s %s in cluster %q: %w", u.GetKind(), u.GetName(), cl, err))
			}
		}
		if !keepNamespace {
			if err := deleteNamespace(ctx, c, sc.Namespace); err != nil {
				errs = append(errs, fmt.Errorf("cluster %q: %w", cl, err))
			}
		}
	}
	// Wait for the cluster-scoped objects to go: the next scenario may apply the same names.
	if len(sc.clusterScoped) > 0 {
		err := Await(ctx, sc.Config.Wait(WaitCleanup), "the scenario's cluster-scoped objects to be deleted", func(ctx context.Context) error {
			return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
				for _, u := range sc.clusterScoped {
					err := c.Get(ctx, client.ObjectKeyFromObject(u), u.DeepCopy())
					if err == nil {
						return fmt.Errorf("%s %s still exists", u.GetKind(), u.GetName())
					}
					if !apierrors.IsNotFound(err) {
						return err
					}
				}
				return nil
			})
		})
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// deleteNamespace deletes a namespace; one already gone is fine.
func deleteNamespace(ctx context.Context, c client.Client, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := c.Delete(ctx, ns); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("delete namespace %s: %w", name, err)
	}
	return nil
}

// forEachCluster runs fn for each named cluster with its admin client and joins the errors,
// each prefixed with the cluster's name.
func (sc *Scenario) forEachCluster(ctx context.Context, clusters []string, fn func(ctx context.Context, cluster string, c client.Client) error) error {
	var errs []error
	for _, cl := range clusters {
		c, err := sc.Clients.Admin(cl)
		if err == nil {
			err = fn(ctx, cl, c)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("cluster %q: %w", cl, err))
		}
	}
	return errors.Join(errs...)
}

// OtherClusters returns every cluster but the named ones.
func (sc *Scenario) OtherClusters(except ...string) []string {
	var out []string
	for _, c := range sc.Fed.Clusters() {
		if !slices.Contains(except, c) {
			out = append(out, c)
		}
	}
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
