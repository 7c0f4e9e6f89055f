// Package setup builds the operator's controller-runtime manager and wires every reconciler
// into it. main.go only parses flags and calls New; tests and the benchmark call New too, so
// they run exactly the wiring the binary runs.
//
// The reconciler contract. Every package under operator/reconcilers exports
//
//	type Reconciler struct {
//		client.Client
//		Scheme      *runtime.Scheme
//		Recorder    events.EventRecorder // k8s.io/client-go/tools/events (events.k8s.io/v1)
//		ClusterName string
//	}
//	func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error
//
// Recorder is the new-style events.EventRecorder that mgr.GetEventRecorder(name) returns (not
// the deprecated record.EventRecorder): Eventf(regarding, related, type, reason, action, note).
// The event reason equals the condition reason it reports. The manager's client does not cache
// Secrets (every Get goes to the API server; RBAC allows only `get` on Secrets, so Secrets can
// be neither listed nor watched).
package setup
