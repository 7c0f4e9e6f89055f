package harness

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/soak"
)

// ApplyEverywhere applies a manifest to every cluster, as Flux would deliver it; namespaced
// objects go to the scenario's namespace.
func (sc *Scenario) ApplyEverywhere(ctx context.Context, manifest []byte) error {
	return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		return sc.apply(ctx, c, manifest)
	})
}

// ApplyTo creates the objects of a manifest in one cluster, as `kubectl create` does (strict
// field validation, so a misspelt field is refused by name), and returns what the API server
// said. Validation scenarios use it; server-side apply would name list entries by their keys
// (targets[clusterRef="alpha"]) rather than by index.
func (sc *Scenario) ApplyTo(ctx context.Context, cluster string, manifest []byte) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	objs, err := DecodeManifests(manifest)
	if err != nil {
		return err
	}
	for _, u := range objs {
		namespaced, err := c.IsObjectNamespaced(u)
		if err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if namespaced {
			u.SetNamespace(sc.Namespace)
		} else {
			sc.clusterScoped = append(sc.clusterScoped, u.DeepCopy())
		}
		if err := c.Create(ctx, u, client.FieldOwner(FieldOwner), client.FieldValidation(metav1.FieldValidationStrict)); err != nil {
			return fmt.Errorf("create %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

func (sc *Scenario) apply(ctx context.Context, c client.Client, manifest []byte) error {
	objs, err := DecodeManifests(manifest)
	if err != nil {
		return err
	}
	for _, u := range objs {
		namespaced, err := c.IsObjectNamespaced(u)
		if err != nil {
			return fmt.Errorf("%s %s: %w", u.GetKind(), u.GetName(), err)
		}
		if namespaced {
			u.SetNamespace(sc.Namespace)
		} else if !slices.ContainsFunc(sc.clusterScoped, func(o *unstructured.Unstructured) bool {
			return o.GroupVersionKind() == u.GroupVersionKind() && o.GetName() == u.GetName()
		}) {
			sc.clusterScoped = append(sc.clusterScoped, u.DeepCopy())
		}
		err = c.Apply(ctx, client.ApplyConfigurationFromUnstructured(u), client.FieldOwner(FieldOwner), client.ForceOwnership)
		if err != nil {
			return fmt.Errorf("apply %s %s: %w", u.GetKind(), u.GetName(), err)
		}
	}
	return nil
}

// ObjectSnapshot identifies the objects of a cluster that a scenario may touch: each by kind,
// namespace and name, with its UID and generation (status updates do not count as changes).
type ObjectSnapshot map[string]string

var snapshotKinds = []client.ObjectList{
	&polykubev1alpha1.WorkloadList{}, &polykubev1alpha1.ServiceEndpointList{},
	&polykubev1alpha1.DatastoreBindingList{}, &polykubev1alpha1.FederationList{},
	&polykubev1alpha1.ClusterMemberList{}, &appsv1.DeploymentList{}, &corev1.ServiceList{},
	&corev1.SecretList{},
}

// Snapshot records the cluster-scoped Polykube objects of the cluster and the namespaced Polykube
// objects, Deployments, Services and Secrets of the scenario's namespace.
func (sc *Scenario) Snapshot(ctx context.Context, cluster string) (ObjectSnapshot, error) {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return nil, err
	}
	snap := ObjectSnapshot{}
	for _, l := range snapshotKinds {
		list := l.DeepCopyObject().(client.ObjectList)
		opts := []client.ListOption{}
		// Namespaced kinds are compared in the scenario's namespace only: the namespaces of
		// earlier scenarios are still being deleted in the background.
		switch list.(type) {
		case *polykubev1alpha1.FederationList, *polykubev1alpha1.ClusterMemberList:
		default:
			opts = append(opts, client.InNamespace(sc.Namespace))
		}
		if err := c.List(ctx, list, opts...); err != nil {
			return nil, fmt.Errorf("list %T: %w", list, err)
		}
		kind := strings.TrimSuffix(fmt.Sprintf("%T", list), "List")
		err := meta.EachListItem(list, func(o runtime.Object) error {
			m, err := meta.Accessor(o)
			if err != nil {
				return err
			}
			snap[fmt.Sprintf("%s %s/%s", kind, m.GetNamespace(), m.GetName())] = fmt.Sprintf("uid=%s generation=%d", m.GetUID(), m.GetGeneration())
			return nil
		})
		if err != nil {
			return nil, err
		}
	}
	return snap, nil
}

// Remember keeps a snapshot of the cluster under a label for CheckUnchanged.
func (sc *Scenario) Remember(ctx context.Context, label, cluster string) error {
	snap, err := sc.Snapshot(ctx, cluster)
	if err != nil {
		return fmt.Errorf("snapshot cluster %q: %w", cluster, err)
	}
	sc.before[label+"/"+cluster] = snap
	return nil
}

// CheckUnchanged compares the cluster with the snapshot remembered under label.
func (sc *Scenario) CheckUnchanged(ctx context.Context, label, cluster string) error {
	before, ok := sc.before[label+"/"+cluster]
	if !ok {
		return fmt.Errorf("no snapshot %q of cluster %q was taken; the step that changes the cluster takes it", label, cluster)
	}
	now, err := sc.Snapshot(ctx, cluster)
	if err != nil {
		return fmt.Errorf("snapshot cluster %q: %w", cluster, err)
	}
	if d := diffSnapshots(before, now); d != "" {
		return fmt.Errorf("cluster %q changed: %s", cluster, d)
	}
	return nil
}

// Condition is an expected status condition; empty fields are not checked.
type Condition struct {
	Type   string
	Status metav1.ConditionStatus
	Reason string
	// MessageNames are strings the message must contain.
	MessageNames []string
}

func (want Condition) String() string {
	s := fmt.Sprintf("%s=%s", want.Type, want.Status)
	if want.Reason != "" {
		s += " reason " + want.Reason
	}
	if len(want.MessageNames) > 0 {
		s += fmt.Sprintf(" naming %q", want.MessageNames)
	}
	return s
}

func (want Condition) check(conds []metav1.Condition, generation int64) error {
	got := meta.FindStatusCondition(conds, want.Type)
	if got == nil {
		var have []string
		for _, c := range conds {
			have = append(have, c.Type+"="+string(c.Status))
		}
		return fmt.Errorf("no %s condition (has %v)", want.Type, have)
	}
	seen := fmt.Sprintf("%s=%s reason %s message %q", got.Type, got.Status, got.Reason, got.Message)
	if got.Status != want.Status || (want.Reason != "" && got.Reason != want.Reason) {
		return errors.New(seen)
	}
	if got.ObservedGeneration != 0 && got.ObservedGeneration != generation {
		return fmt.Errorf("%s (for generation %d, not the current %d)", seen, got.ObservedGeneration, generation)
	}
	for _, n := range want.MessageNames {
		if !strings.Contains(got.Message, n) {
			return fmt.Errorf("%s does not name %q", seen, n)
		}
	}
	return nil
}

// Conditioned is a Polykube object with conditions.
type Conditioned interface {
	client.Object
	GetConditions() []metav1.Condition
}

// AwaitConditions waits until each named cluster's copy of obj (namespaced objects in the
// scenario's namespace) has every wanted condition. newObj returns an empty object of the kind.
func (sc *Scenario) AwaitConditions(ctx context.Context, clusters []string, newObj func() Conditioned, name string, want ...Condition) error {
	probe := newObj()
	kind := strings.TrimPrefix(fmt.Sprintf("%T", probe), "*v1alpha1.")
	what := fmt.Sprintf("%s %q in %s to have %v", kind, name, strings.Join(clusters, ", "), want)
	return Await(ctx, sc.Config.Wait(WaitConverge), what, func(ctx context.Context) error {
		return sc.forEachCluster(ctx, clusters, func(ctx context.Context, cl string, c client.Client) error {
			obj := newObj()
			key := client.ObjectKey{Name: name}
			if namespaced, err := c.IsObjectNamespaced(obj); err != nil {
				return err
			} else if namespaced {
				key.Namespace = sc.Namespace
			}
			if err := c.Get(ctx, key, obj); err != nil {
				return fmt.Errorf("get %s %s: %w", kind, name, err)
			}
			var errs []error
			for _, w := range want {
				if err := w.check(obj.GetConditions(), obj.GetGeneration()); err != nil {
					errs = append(errs, err)
				}
			}
			return errors.Join(errs...)
		})
	})
}

// CreateSecret creates a Secret with random values for the keys in one cluster, and remembers
// the values so CheckNoSecretValues can look for them.
func (sc *Scenario) CreateSecret(ctx context.Context, cluster, name string, keys []string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: sc.Namespace}, Data: map[string][]byte{}}
	for _, k := range keys {
		b := make([]byte, 12)
		_, _ = rand.Read(b)
		v := "secret-" + hex.EncodeToString(b)
		s.Data[k] = []byte(v)
		sc.secretValues = append(sc.secretValues, v)
	}
	if err := c.Create(ctx, s); err != nil {
		return fmt.Errorf("create Secret %s in cluster %q: %w", name, cluster, err)
	}
	return nil
}

// CheckNoSecret checks that a cluster has no Secret of that name in the scenario's namespace.
func (sc *Scenario) CheckNoSecret(ctx context.Context, cluster, name string) error {
	c, err := sc.Clients.Admin(cluster)
	if err != nil {
		return err
	}
	err = c.Get(ctx, client.ObjectKey{Namespace: sc.Namespace, Name: name}, &corev1.Secret{})
	if err == nil {
		return fmt.Errorf("cluster %q has a Secret %s", cluster, name)
	}
	if !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// CheckNoSecretValues looks for every secret value the scenario created, plain and base64,
// in every object of the scenario's namespace other than Secrets, and in the Polykube objects,
// in every cluster.
func (sc *Scenario) CheckNoSecretValues(ctx context.Context) error {
	if len(sc.secretValues) == 0 {
		return errors.New("the scenario created no Secret, so there is no value to look for")
	}
	var needles []string
	for _, v := range sc.secretValues {
		needles = append(needles, v, base64.StdEncoding.EncodeToString([]byte(v)))
	}
	lists := []client.ObjectList{
		&polykubev1alpha1.WorkloadList{}, &polykubev1alpha1.DatastoreBindingList{}, &polykubev1alpha1.ServiceEndpointList{},
		&appsv1.DeploymentList{}, &appsv1.ReplicaSetList{}, &corev1.PodList{}, &corev1.ConfigMapList{},
		&corev1.EventList{}, &corev1.ServiceList{},
	}
	return sc.forEachCluster(ctx, sc.Fed.Clusters(), func(ctx context.Context, cl string, c client.Client) error {
		for _, l := range lists {
			list := l.DeepCopyObject().(client.ObjectList)
			if err := c.List(ctx, list, client.InNamespace(sc.Namespace)); err != nil {
				return fmt.Errorf("list %T: %w", list, err)
			}
			data, err := json.Marshal(list)
			if err != nil {
				return err
			}
			for _, n := range needles {
				if strings.Contains(string(data), n) {
					return fmt.Errorf("a secret value appears in a %T in namespace %s", list, sc.Namespace)
				}
			}
		}
		return nil
	})
}

// observed is what the scenario saw of the clusters and remembered to compare with later.
type observed struct {
	// LastApplyErr is the error of the last apply that a validation step inspects.
	LastApplyErr error
	// before holds per-cluster snapshots taken by steps that later assert "nothing changed".
	before map[string]ObjectSnapshot
	// deployments tracks every Deployment of every Workload seen, per cluster.
	deployments map[string]*deploymentHistory
	// pods are pod UIDs remembered per cluster/workload.
	pods map[string][]string
	// secretValues are the values of the Secrets the scenario created.
	secretValues []string
	// soakReport is what the scenario's soak found.
	soakReport *soak.Report
	// Status is the last polykube-status run.
	Status *StatusRun
}
