// Package statusfinal is the one policy by which every Polykube reconciler writes its object's
// status at the end of a reconcile (Flux calls this step finalizeStatus, Cluster API runs it as
// a deferred patch):
//
//  1. a non-terminal error is recorded in the status (by default Ready=False/ReconcileFailed);
//  2. the status is compared with the copy the reconcile started from, and patched only when it
//     changed, with that copy's resourceVersion as a precondition (optimistic lock): a status
//     computed from an outdated cached copy is refused by the API server instead of overwriting
//     a newer one; the refusal is not an error: the object is reconciled again shortly, and an
//     error of this reconcile (computed from the outdated copy) is left to that next reconcile;
//  3. the resourceVersion of each status write is remembered, so that a reconcile reading a
//     cached copy older than its own last write (the cache lags) neither trusts "unchanged"
//     (an A→B→A flip would otherwise leave B on the server, since the reconcilers filter out
//     the watch events of their own status writes) nor writes: it is retried shortly, likewise;
//  4. after a successful write, a transition of a watched condition (status or reason) is
//     recorded as an event whose reason is the condition's reason.
//
// The memory of writes lives in the process: after a restart the first reconcile of each object
// reads a freshly synced cache, which is not behind a write of this process.
package statusfinal

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/operator/internal/metrics"
)

// DefaultStaleRetry is how soon an object whose status write was refused, or whose cached copy
// is behind this process's last write, is reconciled again.
const DefaultStaleRetry = time.Second

// Object is a Polykube API object with conditions in its status.
type Object interface {
	client.Object
	GetConditions() []metav1.Condition
	SetConditions([]metav1.Condition)
}

// Finalizer writes the status of one reconciler's objects. The zero value of every field but
// Client is usable; one Finalizer is shared by all reconciles of a controller.
type Finalizer struct {
	// Client patches the status subresource.
	Client client.Client
	// Recorder receives the transition events; nil records none.
	Recorder events.EventRecorder
	// Kind names the object in error messages ("Workload").
	Kind string
	// Action is the events.k8s.io action of every event.
	Action string
	// EventConditions are the condition types whose transitions become events; nil means Ready.
	EventConditions []string
	// NoEvent, when set, tells which transitions get no event (prev is nil for a new condition).
	NoEvent func(prev *metav1.Condition, c metav1.Condition) bool
	// OnError records a non-terminal reconcile error in the status; nil sets
	// Ready=False/ReconcileFailed with the error as message.
	OnError func(obj Object, err error)
	// StaleRetry overrides DefaultStaleRetry.
	StaleRetry time.Duration

	written sync.Map // types.NamespacedName → resourceVersion of the last status write
}

// Forget drops what is remembered about an object (call it when the object is gone).
func (f *Finalizer) Forget(key types.NamespacedName) { f.written.Delete(key) }

// Behind reports whether obj, as read, is older than this process's last status write of it.
// Resource versions are compared as the API server defines them (k8s.io/apimachinery
// resourceversion); one that cannot be compared counts as not behind.
func (f *Finalizer) Behind(obj client.Object) bool {
	last, ok := f.written.Load(client.ObjectKeyFromObject(obj))
	if !ok {
		return false
	}
	cmp, err := resourceversion.CompareResourceVersion(obj.GetResourceVersion(), last.(string))
	return err == nil && cmp < 0
}

// Finalize records retErr, patches obj's status when it differs from before (the copy the
// reconcile started from) and records events; it returns the result and error the reconciler
// should return.
func (f *Finalizer) Finalize(ctx context.Context, before, obj Object, result ctrl.Result, retErr error) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	if retErr != nil && !errors.Is(retErr, reconcile.TerminalError(nil)) {
		if f.OnError != nil {
			f.OnError(obj, retErr)
		} else {
			c := metav1.Condition{Type: polykubev1alpha1.ReadyCondition, Status: metav1.ConditionFalse,
				Reason: polykubev1alpha1.ReasonReconcileFailed, Message: retErr.Error(), ObservedGeneration: obj.GetGeneration()}
			conds := obj.GetConditions()
			meta.SetStatusCondition(&conds, c)
			obj.SetConditions(conds)
		}
	}
	if f.Behind(before) {
		// The cached copy does not show this process's last write yet: "unchanged" cannot be
		// trusted and a write would be refused anyway. The newer copy is on its way.
		log.V(1).Info("The cached copy is older than the last status write; reconciling again", "resourceVersion", before.GetResourceVersion())
		return ctrl.Result{RequeueAfter: f.staleRetry()}, nil
	}
	same, err := sameStatus(before, obj)
	if err != nil {
		return result, utilerrors.NewAggregate([]error{retErr, err})
	}
	if same {
		return result, retErr
	}
	patch := client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})
	if err := f.Client.Status().Patch(ctx, obj, patch); err != nil {
		switch {
		case apierrors.IsConflict(err):
			metrics.StatusWrite(f.Kind, metrics.StatusConflict)
			log.V(1).Info("Status computed from an outdated copy was refused; reconciling again", "resourceVersion", before.GetResourceVersion(), "reconcileError", retErr)
			return ctrl.Result{RequeueAfter: f.staleRetry()}, nil
		case apierrors.IsNotFound(err):
			metrics.StatusWrite(f.Kind, metrics.StatusError)
			f.Forget(client.ObjectKeyFromObject(obj))
			return result, nil
		}
		metrics.StatusWrite(f.Kind, metrics.StatusError)
		return result, utilerrors.NewAggregate([]error{retErr,
			fmt.Errorf("patch status of %s %s: %w", f.Kind, client.ObjectKeyFromObject(obj), err)})
	}
	metrics.StatusWrite(f.Kind, metrics.StatusWritten)
	f.written.Store(client.ObjectKeyFromObject(obj), obj.GetResourceVersion())
	f.events(before, obj)
	return result, retErr
}

func (f *Finalizer) events(before, obj Object) {
	if f.Recorder == nil {
		return
	}
	types := f.EventConditions
	if types == nil {
		types = []string{polykubev1alpha1.ReadyCondition}
	}
	for _, t := range types {
		c := meta.FindStatusCondition(obj.GetConditions(), t)
		if c == nil {
			continue
		}
		prev := meta.FindStatusCondition(before.GetConditions(), t)
		if prev != nil && prev.Status == c.Status && prev.Reason == c.Reason {
			continue
		}
		if f.NoEvent != nil && f.NoEvent(prev, *c) {
			continue
		}
		typ := corev1.EventTypeNormal
		if c.Status != metav1.ConditionTrue {
			typ = corev1.EventTypeWarning
		}
		note := c.Message
		if t != polykubev1alpha1.ReadyCondition {
			note = t + ": " + c.Message
		}
		f.Recorder.Eventf(obj, nil, typ, c.Reason, f.Action, "%s", note)
	}
}

func (f *Finalizer) staleRetry() time.Duration {
	if f.StaleRetry > 0 {
		return f.StaleRetry
	}
	return DefaultStaleRetry
}

// sameStatus compares the status field of two objects of one kind. It goes through the
// unstructured form so that one function serves every kind.
func sameStatus(a, b runtime.Object) (bool, error) {
	ua, err := runtime.DefaultUnstructuredConverter.ToUnstructured(a)
	if err != nil {
		return false, fmt.Errorf("compare status: %w", err)
	}
	ub, err := runtime.DefaultUnstructuredConverter.ToUnstructured(b)
	if err != nil {
		return false, fmt.Errorf("compare status: %w", err)
	}
	return equality.Semantic.DeepEqual(ua["status"], ub["status"]), nil
}
