package setup

import (
	"crypto/tls"

	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
)

// The metrics endpoint asks the API server who a scraper is (TokenReview) and whether it may
// get /metrics (SubjectAccessReview): the ClusterRole polykube-metrics-reader in
// gitops/monitoring grants that.
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create

// metricsServer serves the metrics over HTTPS, to clients whose bearer token the API server
// authenticates and authorises for GET /metrics, as Kubernetes' own components do. The metrics
// name every Workload and ClusterMember of the cluster, so they are not for anyone who can
// reach the pod.
func metricsServer(o Options) metricsserver.Options {
	return metricsserver.Options{
		BindAddress:    o.MetricsBindAddress,
		SecureServing:  true,
		FilterProvider: filters.WithAuthenticationAndAuthorization,
		CertDir:        o.MetricsCertDir,
		// HTTP/1.1 only: Prometheus does not need HTTP/2, and refusing it keeps the endpoint
		// out of reach of HTTP/2 stream-reset floods (CVE-2023-44487, CVE-2023-39325).
		TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
	}
}
