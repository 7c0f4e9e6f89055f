// Package flags maps the operator's command line onto setup.Options.
package flags

import (
	"flag"
	"fmt"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/polykube/polykube/operator/internal/setup"
)

// Defaults of the flags.
const (
	DefaultMetricsBindAddress      = ":8443"
	DefaultHealthProbeBindAddress  = ":8081"
	DefaultMaxConcurrentReconciles = 8
)

// Parsed is the result of Parse.
type Parsed struct {
	Options setup.Options
	Zap     zap.Options
	// Version is true when --version was given: print the version and exit, validating nothing.
	Version bool
}

// Parse defines the operator's flags on fs, parses args and validates the result. The
// --kubeconfig flag is controller-runtime's (registered on flag.CommandLine by its config
// package); on another FlagSet Parse registers it too.
func Parse(fs *flag.FlagSet, args []string) (*Parsed, error) {
	p := &Parsed{Zap: zap.Options{Development: false}}
	o := &p.Options
	fs.StringVar(&o.ClusterName, "cluster-name", "",
		"Name of this cluster: the ClusterMember this operator acts for (required).")
	fs.StringVar(&o.MetricsBindAddress, "metrics-bind-address", DefaultMetricsBindAddress,
		"Address the Prometheus metrics endpoint binds to (HTTPS; scrapers need a token allowed to get /metrics, see docs/metrics.md); 0 disables it.")
	fs.StringVar(&o.MetricsCertDir, "metrics-cert-dir", "",
		"Directory with tls.crt and tls.key for the metrics endpoint (reloaded on change); empty means a self-signed certificate made at start.")
	fs.StringVar(&o.HealthProbeBindAddress, "health-probe-bind-address", DefaultHealthProbeBindAddress,
		"Address the /healthz and /readyz endpoints bind to; 0 disables them.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false,
		"Elect a leader among operator replicas in this cluster, so only one reconciles.")
	fs.StringVar(&o.LeaderElectionNamespace, "leader-election-namespace", "",
		"Namespace of the leader election Lease; defaults to the operator's own namespace in-cluster.")
	fs.StringVar(&o.IdentityNamespace, "identity-namespace", "polykube-system",
		"Namespace of the ConfigMap polykube-identity that pins this cluster to its ClusterMember (the operator's namespace).")
	fs.DurationVar(&o.SecretRecheckInterval, "secret-recheck-interval", 0,
		"How often a DatastoreBinding whose Secret or keys are missing is checked again (Secrets are not watched); 0 means 30s.")
	fs.IntVar(&o.MaxConcurrentReconciles, "max-concurrent-reconciles", DefaultMaxConcurrentReconciles,
		"Number of Workloads reconciled in parallel.")
	var watchNamespaces string
	fs.StringVar(&watchNamespaces, "watch-namespaces", "",
		"Comma-separated namespaces the operator watches and writes in (for example team-a,team-b); empty means every namespace. "+
			"Workloads, ServiceEndpoints and DatastoreBindings in other namespaces are never seen: they get no Deployment, Service or status. "+
			"Pair it with the RBAC of gitops/operator-namespaced (Roles in those namespaces only).")
	if fs.Lookup("kubeconfig") == nil {
		fs.String("kubeconfig", "", "Path to a kubeconfig. Only required if out-of-cluster.")
	}
	fs.BoolVar(&p.Version, "version", false, "Print the operator's version and exit.")
	p.Zap.BindFlags(fs)

	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if p.Version {
		return p, nil
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments %q: the operator takes flags only (see --help)", fs.Args())
	}
	if watchNamespaces != "" {
		o.WatchNamespaces = strings.Split(watchNamespaces, ",")
	}
	if o.MaxConcurrentReconciles < 1 {
		return nil, fmt.Errorf("--max-concurrent-reconciles=%d: use 1 or more", o.MaxConcurrentReconciles)
	}
	if err := o.Validate(); err != nil {
		return nil, err
	}
	return p, nil
}
