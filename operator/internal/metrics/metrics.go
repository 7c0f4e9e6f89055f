// Package metrics holds the operator's Prometheus metrics. They are registered with the
// controller-runtime registry, so the manager's metrics endpoint serves them beside the
// controller-runtime and client-go metrics.
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
)

func init() {
	ctrlmetrics.Registry.MustRegister(WorkloadDesiredReplicas, WorkloadReadyReplicas, ReconcileErrors)
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
