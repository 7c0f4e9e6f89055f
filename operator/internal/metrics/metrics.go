// Package metrics holds the operator's Prometheus metrics. They are registered with the
// controller-runtime registry, so the manager's metrics endpoint serves them beside the
// controller-runtime and client-go metrics. docs/metrics.md lists them with their labels.
//
// Two kinds: what a reconcile does (errors, status writes, drift it reverted) is counted where
// it happens; what the objects say (failover, roster, mesh prerequisites, identity, suspension)
// is read from the informer cache when Prometheus scrapes (fleet.go), so no reconciler has to
// keep a gauge in step with every path that changes a status.
package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

var (
	// WorkloadDesiredReplicas is this cluster's allocation for a Workload.
	WorkloadDesiredReplicas = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "polykube_workload_desired_replicas",
		Help: "Replicas this cluster runs for the Workload, as computed from its distribution.",
	}, []string{"namespace", "workload"})

	// WorkloadReadyReplicas is the ready replica count of a Workload's local Deployment.
	WorkloadReadyReplicas = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "polykube_workload_ready_replicas",
		Help: "Ready replicas of the Workload's Deployment in this cluster.",
	}, []string{"namespace", "workload"})

	// ReconcileErrors counts failed reconciliations by controller and condition reason.
	ReconcileErrors = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "polykube_reconcile_errors_total",
		Help: "Reconciliations that ended in an error or a Ready=False condition caused by an error, by controller and reason.",
	}, []string{"controller", "reason"})

	// StatusWrites counts status patches by kind and outcome.
	StatusWrites = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "polykube_status_writes_total",
		Help: "Status patches sent to the API server, by kind and result (written, conflict, error). A quiet fleet writes none.",
	}, []string{"kind", "result"})

	// DriftReverted counts the objects the operator set back after someone else changed them.
	DriftReverted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "polykube_drift_reverted_total",
		Help: "Changes made by someone else to an object the operator manages that the operator set back, by kind and field (Deployment: replicas, template; HorizontalPodAutoscaler: spec).",
	}, []string{"kind", "field"})
)

// Results of a status write (the result label of polykube_status_writes_total).
const (
	StatusWritten  = "written"
	StatusConflict = "conflict"
	StatusError    = "error"
)

func init() {
	ctrlmetrics.Registry.MustRegister(WorkloadDesiredReplicas, WorkloadReadyReplicas, ReconcileErrors,
		StatusWrites, DriftReverted, fleet)
}

// SetWorkloadReplicas records a Workload's desired and ready replicas.
func SetWorkloadReplicas(namespace, name string, desired, ready int32) {
	WorkloadDesiredReplicas.WithLabelValues(namespace, name).Set(float64(desired))
	WorkloadReadyReplicas.WithLabelValues(namespace, name).Set(float64(ready))
}

// ForgetWorkload drops a deleted Workload's series.
func ForgetWorkload(namespace, name string) {
	WorkloadDesiredReplicas.DeleteLabelValues(namespace, name)
	WorkloadReadyReplicas.DeleteLabelValues(namespace, name)
}

// ReconcileError counts one failed reconciliation.
func ReconcileError(controller, reason string) {
	ReconcileErrors.WithLabelValues(controller, reason).Inc()
}

// StatusWrite counts one status patch of kind with its result.
func StatusWrite(kind, result string) {
	StatusWrites.WithLabelValues(kind, result).Inc()
}

// Drift counts one change by someone else to field of a kind that the operator set back.
func Drift(kind, field string) {
	DriftReverted.WithLabelValues(kind, field).Inc()
}
