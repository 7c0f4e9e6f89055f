package datastorebinding

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
)

// Resolution says whether the local Secret offers everything a binding needs. It carries key
// names only; Resolve never returns, logs or stores a Secret value.
type Resolution struct {
	// Reason is empty when the binding can be wired, else ReasonSecretNotFound,
	// ReasonSecretKeyMissing, ReasonSecretUnreadable or ReasonInvalidSpec (spec.secretRef.name
	// is no Secret name).
	Reason string
	// Message explains Reason in a sentence that names the Secret and what to do.
	Message string
	// MissingKeys are the keys the binding needs and the Secret lacks, sorted.
	MissingKeys []string
}

// OK is true when the Secret and every key exist.
func (r Resolution) OK() bool { return r.Reason == "" }

// Resolve reads the binding's Secret (the reader must not be a cache: Secrets are not cached,
// and the operator may only `get` them) and checks that every key the binding maps exists.
//
// What the binding's author can fix is a Resolution, not an error: a name no Secret can have
// (InvalidSpec: the CRD refuses it, but a binding created before that rule may carry one, and
// client-go refuses to send it), and a Secret the operator may not read (SecretUnreadable). An
// error is left for what passes by itself (the API server unreachable), which the caller retries.
func Resolve(ctx context.Context, c client.Reader, b *polykubev1alpha1.DatastoreBinding) (Resolution, error) {
	key := types.NamespacedName{Namespace: b.Namespace, Name: b.Spec.SecretRef.Name}
	if msgs := validation.IsDNS1123Subdomain(key.Name); len(msgs) > 0 {
		return Resolution{
			Reason: polykubev1alpha1.ReasonInvalidSpec,
			Message: fmt.Sprintf("spec.secretRef.name %q is not a valid Secret name (%s): no Secret can have it; fix the DatastoreBinding in Git (for example ledger-db)",
				key.Name, strings.Join(msgs, "; ")),
		}, nil
	}
	secret := &corev1.Secret{}
	// client-go logs response bodies through the context's logger at verbosity 8 and above;
	// this response holds the Secret's values, so its request gets a logger that discards.
	if err := c.Get(logr.NewContext(ctx, logr.Discard()), key, secret); err != nil {
		switch {
		case apierrors.IsNotFound(err):
			return Resolution{
				Reason: polykubev1alpha1.ReasonSecretNotFound,
				Message: fmt.Sprintf("Secret %s not found in this cluster: create it with the keys %s (Polykube never copies Secrets between clusters)",
					key, strings.Join(neededKeys(b), ", ")),
			}, nil
		case apierrors.IsForbidden(err):
			return Resolution{
				Reason: polykubev1alpha1.ReasonSecretUnreadable,
				Message: fmt.Sprintf("Secret %s cannot be read by the operator: %v; grant its ServiceAccount get on Secrets in namespace %s (the polykube-operator ClusterRole does)",
					key, err, key.Namespace),
			}, nil
		}
		return Resolution{}, fmt.Errorf("get Secret %s: %w", key, err)
	}
	return resolveKeys(b, secret), nil
}

// resolveKeys checks the Secret's key names against the binding.
func resolveKeys(b *polykubev1alpha1.DatastoreBinding, secret *corev1.Secret) Resolution {
	var missing []string
	for _, k := range neededKeys(b) {
		if _, ok := secret.Data[k]; ok {
			continue
		}
		if _, ok := secret.StringData[k]; ok {
			continue
		}
		missing = append(missing, k)
	}
	if len(missing) == 0 {
		return Resolution{}
	}
	return Resolution{
		Reason: polykubev1alpha1.ReasonSecretKeyMissing,
		Message: fmt.Sprintf("Secret %s/%s lacks the keys %s: add them to the Secret in this cluster or change spec.env",
			secret.Namespace, secret.Name, strings.Join(missing, ", ")),
		MissingKeys: missing,
	}
}

// neededKeys are the distinct Secret keys a binding maps, sorted.
func neededKeys(b *polykubev1alpha1.DatastoreBinding) []string {
	seen := map[string]bool{}
	var keys []string
	for _, e := range b.Spec.Env {
		if !seen[e.Key] {
			seen[e.Key] = true
			keys = append(keys, e.Key)
		}
	}
	sort.Strings(keys)
	return keys
}

// EnvVars are the env vars a binding injects: prefix+name, valueFrom.secretKeyRef to the local
// Secret. They reference the Secret; they never hold its values.
func EnvVars(b *polykubev1alpha1.DatastoreBinding) []corev1.EnvVar {
	out := make([]corev1.EnvVar, 0, len(b.Spec.Env))
	for _, e := range b.Spec.Env {
		out = append(out, corev1.EnvVar{
			Name: b.Spec.Prefix + e.Name,
			ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{
				LocalObjectReference: corev1.LocalObjectReference{Name: b.Spec.SecretRef.Name},
				Key:                  e.Key,
			}},
		})
	}
	return out
}

// EnvNames are the names of EnvVars, in spec order.
func EnvNames(b *polykubev1alpha1.DatastoreBinding) []string {
	names := make([]string, 0, len(b.Spec.Env))
	for _, e := range b.Spec.Env {
		names = append(names, b.Spec.Prefix+e.Name)
	}
	return names
}

// AppliesTo is true when the binding injects into the named container: every container when
// spec.containers is empty, else only the listed ones.
func AppliesTo(b *polykubev1alpha1.DatastoreBinding, container string) bool {
	if len(b.Spec.Containers) == 0 {
		return true
	}
	for _, c := range b.Spec.Containers {
		if c == container {
			return true
		}
	}
	return false
}

// ForWorkload returns the bindings in list that reference the named Workload, in the order
// they were established (creationTimestamp, then UID, then name), so that every reconcile
// applies them in the same order and the first established keeps a colliding variable.
func ForWorkload(list []polykubev1alpha1.DatastoreBinding, workload string) []polykubev1alpha1.DatastoreBinding {
	var out []polykubev1alpha1.DatastoreBinding
	for _, b := range list {
		if b.Spec.WorkloadRef.Name == workload {
			out = append(out, b)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return establishedBefore(&out[i], &out[j]) })
	return out
}
