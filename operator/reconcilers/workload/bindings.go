package workload

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/reconcilers/datastorebinding"
)

// bindings lists the DatastoreBindings referencing the Workload and checks each one's Secret.
// unresolved is true when at least one cannot be wired yet. One binding's failure is that
// binding's alone: a Secret that cannot be read (a name no Secret can have, Forbidden, an API
// error) leaves the binding unresolved (it wires nothing new and keeps what it wired before) and
// is reported in the Workload's SecretsReadable condition, which this sets; the Workload's other
// work (scaling, template updates, failover) goes on. Only the list itself is an error.
func (r *Reconciler) bindings(ctx context.Context, wl *polykubev1alpha1.Workload) ([]binding, bool, error) {
	list := &polykubev1alpha1.DatastoreBindingList{}
	if err := r.List(ctx, list, client.InNamespace(wl.Namespace)); err != nil {
		return nil, false, fmt.Errorf("list DatastoreBindings in %s: %w", wl.Namespace, err)
	}
	var out []binding
	var unreadable []string
	unresolved := false
	for _, b := range datastorebinding.ForWorkload(list.Items, wl.Name) {
		res, err := datastorebinding.Resolve(ctx, r.Client, &b)
		switch {
		case err != nil:
			ctrl.LoggerFrom(ctx).Error(err, "Reading the Secret of a DatastoreBinding failed; its env vars stay as they are", "datastoreBinding", b.Name)
			unreadable = append(unreadable, fmt.Sprintf("DatastoreBinding %s: %v", b.Name, err))
		case res.Reason == polykubev1alpha1.ReasonSecretUnreadable || res.Reason == polykubev1alpha1.ReasonInvalidSpec:
			unreadable = append(unreadable, fmt.Sprintf("DatastoreBinding %s: %s", b.Name, res.Message))
		}
		ok := err == nil && res.OK()
		unresolved = unresolved || !ok
		out = append(out, binding{DatastoreBinding: b.DeepCopy(), resolved: ok})
	}
	if status, reason, msg, shown := secretsReadableCondition(len(out), unreadable); shown {
		setCondition(&wl.Status.Conditions, wl.Generation, polykubev1alpha1.SecretsReadableCondition, status, reason, msg)
	} else {
		meta.RemoveStatusCondition(&wl.Status.Conditions, polykubev1alpha1.SecretsReadableCondition)
	}
	return out, unresolved, nil
}

// secretsReadableCondition is the Workload's SecretsReadable condition for n bindings of which
// the ones in unreadable ("DatastoreBinding NAME: why") could not have their Secret read;
// shown is false without bindings.
func secretsReadableCondition(n int, unreadable []string) (status metav1.ConditionStatus, reason, msg string, shown bool) {
	if n == 0 {
		return "", "", "", false
	}
	if len(unreadable) == 0 {
		return metav1.ConditionTrue, polykubev1alpha1.ReasonSucceeded,
			"the Secret of every DatastoreBinding of this Workload could be read in this cluster", true
	}
	return metav1.ConditionFalse, polykubev1alpha1.ReasonSecretUnreadable, fmt.Sprintf(
		"%d of %d DatastoreBindings cannot be checked, so none of their env vars is added or changed (what they wired before stays); "+
			"the rest of the Workload is reconciled: %s", len(unreadable), n, strings.Join(unreadable, "; ")), true
}
