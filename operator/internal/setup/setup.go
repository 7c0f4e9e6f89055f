package setup

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/internal/version"
	"github.com/polykube/polykube/operator/internal/identity"
	"github.com/polykube/polykube/operator/internal/metrics"
	"github.com/polykube/polykube/operator/internal/unmanaged"
	"github.com/polykube/polykube/operator/reconcilers/datastorebinding"
	"github.com/polykube/polykube/operator/reconcilers/federation"
	"github.com/polykube/polykube/operator/reconcilers/serviceendpoint"
	"github.com/polykube/polykube/operator/reconcilers/workload"
)

// Leader election holds a Lease in the operator's namespace (polykube-system in gitops/operator)
// and records core Events about it. A different --leader-election-namespace needs the same Role
// there.
// +kubebuilder:rbac:groups=coordination.k8s.io,namespace=polykube-system,resources=leases,verbs=get;create;update
// +kubebuilder:rbac:groups="",namespace=polykube-system,resources=events,verbs=create;patch

// LeaderElectionID names the Lease the operator replicas of one cluster compete for.
const LeaderElectionID = "polykube-operator.polykube.kismet.io"

// Options configure the operator. Flags map one to one onto them (operator/internal/flags).
type Options struct {
	// ClusterName is this cluster's name: the ClusterMember the operator acts for. Required.
	ClusterName string
	// MetricsBindAddress serves Prometheus metrics over HTTPS to authenticated and authorised
	// clients (metricsServer); "0" disables the server.
	MetricsBindAddress string
	// MetricsCertDir holds tls.crt and tls.key for the metrics endpoint (reloaded when they
	// change); empty means a self-signed certificate made at start.
	MetricsCertDir string
	// HealthProbeBindAddress serves /healthz and /readyz; "0" or "" disables the server.
	HealthProbeBindAddress string
	// LeaderElect enables leader election among replicas in one cluster.
	LeaderElect bool
	// LeaderElectionNamespace holds the Lease (defaults to the in-cluster namespace).
	LeaderElectionNamespace string
	// SecretRecheckInterval is how often bindings whose Secret or keys are missing are
	// checked again; 0 means the reconcilers' defaults.
	SecretRecheckInterval time.Duration
	// MaxConcurrentReconciles is the number of Workloads reconciled in parallel.
	MaxConcurrentReconciles int
	// Logger is the manager's logger; the zero value means ctrl.Log.
	Logger logr.Logger
	// SkipControllerNameValidation lets one process create several managers (tests, benchmark).
	SkipControllerNameValidation bool
	// IdentityNamespace holds the ConfigMap that pins this cluster's identity (default
	// polykube-system, the operator's namespace in gitops/operator).
	IdentityNamespace string
	// WatchNamespaces confines the operator to these namespaces: its cache watches namespaced
	// kinds only there, so it needs Roles there and no cluster-wide write (gitops/operator/
	// namespaced). Empty means every namespace.
	WatchNamespaces []string
	// OperatorVersion is reported on this cluster's ClusterMember and in the identity pin;
	// "" means version.Version (what make release stamped into the binary).
	OperatorVersion string
}

// operatorVersion is the version this operator reports about itself.
func (o Options) operatorVersion() string {
	if o.OperatorVersion != "" {
		return o.OperatorVersion
	}
	return version.Version
}

// PinIdentity records on the first start, and checks on every later one, which ClusterMember
// this cluster is (operator/internal/identity). An error means the operator must not start.
func PinIdentity(ctx context.Context, cfg *rest.Config, o Options) error {
	if err := o.Validate(); err != nil {
		return err
	}
	s, err := Scheme()
	if err != nil {
		return err
	}
	c, err := client.New(cfg, client.Options{Scheme: s})
	if err != nil {
		return fmt.Errorf("create a client to check this cluster's identity: %w", err)
	}
	ns := o.IdentityNamespace
	if ns == "" {
		ns = identity.DefaultNamespace
	}
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := identity.Pin(ctx, c, "polykube-operator", ns, o.ClusterName); err != nil {
		return err
	}
	return identity.RecordVersion(ctx, c, ns, o.operatorVersion())
}

// MaxClusterNameLength is Cilium ClusterMesh's limit on a cluster name, which a ClusterMember's
// name (and so --cluster-name) must respect.
const MaxClusterNameLength = 32

// whereClusterNameIsSet is the advice every cluster-name error ends with: the operator is
// installed three ways, and each sets the name in its own place.
const whereClusterNameIsSet = "set it to the name of this cluster's ClusterMember: with Flux, in " +
	"spec.postBuild.substitute.CLUSTER_NAME of the Kustomization that applies gitops/operator; with " +
	"Helm, the chart's value clusterName (--set clusterName=NAME); with install.yaml, the " +
	"--cluster-name argument of Deployment polykube-operator"

// Validate says what is wrong with the options and how to fix it. A wrong cluster name is
// refused before the operator contacts the API server, so it changes nothing: it would never
// match a ClusterMember (whose name the CRD holds to the same rules), and a "${CLUSTER_NAME}"
// left by `kubectl apply -k gitops/operator` would otherwise be pinned as this cluster's identity.
func (o Options) Validate() error {
	if err := ValidateClusterName(o.ClusterName); err != nil {
		return err
	}
	return ValidateWatchNamespaces(o.WatchNamespaces)
}

// ValidateClusterName checks a --cluster-name: present, substituted, a DNS label of at most
// MaxClusterNameLength characters.
func ValidateClusterName(name string) error {
	switch {
	case name == "":
		return fmt.Errorf("--cluster-name is required: %s", whereClusterNameIsSet)
	case strings.Contains(name, "$"):
		return fmt.Errorf("--cluster-name=%q was not substituted: the manifests were applied without Flux's "+
			"variable substitution (kubectl apply -k gitops/operator keeps ${CLUSTER_NAME} as it is); %s", name, whereClusterNameIsSet)
	case len(name) > MaxClusterNameLength:
		return fmt.Errorf("--cluster-name=%q has %d characters: ClusterMesh allows at most %d; %s",
			name, len(name), MaxClusterNameLength, whereClusterNameIsSet)
	}
	if errs := validation.IsDNS1123Label(name); len(errs) > 0 {
		return fmt.Errorf("--cluster-name=%q is not a DNS label (lowercase letters, digits and '-', starting and "+
			"ending with a letter or digit), as a ClusterMember name must be; %s", name, whereClusterNameIsSet)
	}
	return nil
}

// Scheme returns a scheme with the built-in Kubernetes types and the Polykube types.
func Scheme() (*runtime.Scheme, error) {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add Kubernetes types to the scheme: %w", err)
	}
	if err := polykubev1alpha1.AddToScheme(s); err != nil {
		return nil, fmt.Errorf("add Polykube types to the scheme: %w", err)
	}
	return s, nil
}

// New builds the manager with every reconciler wired in. Start it with mgr.Start(ctx).
func New(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	scheme, err := Scheme()
	if err != nil {
		return nil, err
	}
	log := opts.Logger
	if log.GetSink() == nil {
		log = ctrl.Log
	}
	probeAddr := opts.HealthProbeBindAddress
	if probeAddr == "" {
		probeAddr = "0"
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Logger:                  log,
		Metrics:                 metricsServer(opts),
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          opts.LeaderElect,
		LeaderElectionID:        LeaderElectionID,
		LeaderElectionNamespace: opts.LeaderElectionNamespace,
		// A stopping leader gives the Lease up, so that the standby replica takes over within
		// its retry period (2 s) instead of waiting out the lease (15 s) on every rolling
		// update and drain. Safe because the process exits once the manager has stopped
		// (operator/main.go): nothing reconciles after the release.
		LeaderElectionReleaseOnCancel: true,
		// managedFields are stripped before objects enter the cache: the operator never reads
		// them, and for a Deployment they can be as large as its spec. Deployments, Services,
		// HPAs and EndpointSlices are cached only when Polykube manages them (cache.go).
		// With --watch-namespaces the namespaced informers list and watch only those namespaces
		// (namespaces.go).
		Cache: cache.Options{
			DefaultTransform:  cache.TransformStripManagedFields(),
			DefaultNamespaces: defaultNamespaces(opts.WatchNamespaces),
			ByObject:          managedOnly(),
		},
		// Secrets are read with a live GET each time: caching them would need list and watch on
		// every Secret of the cluster, and would hold their values in the operator's memory.
		Client: client.Options{Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}}},
		Controller: config.Controller{
			SkipNameValidation: ptr.To(opts.SkipControllerNameValidation),
			// The classic rate-limited work queue, not the priority queue that controller-runtime
			// v0.24 enables by default: v0.24.1's priority queue can deadlock on shutdown (a
			// ready item is handed over under its lock to a worker that already left;
			// controller-runtime#3538, fixed in v0.25 by #3540), which kept the manager from
			// stopping within its grace period here (seen in the reconcilers' envtest suites
			// under load). Revisit when go.mod moves to controller-runtime v0.25.
			UsePriorityQueue: ptr.To(false),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("create controller manager: %w", err)
	}

	// The objects Polykube did not make, as little of them as its checks read (operator/internal/unmanaged).
	others, err := unmanaged.NewCache(mgr.GetConfig(), cache.Options{
		HTTPClient: mgr.GetHTTPClient(), Scheme: mgr.GetScheme(), Mapper: mgr.GetRESTMapper(),
		DefaultNamespaces: defaultNamespaces(opts.WatchNamespaces),
	})
	if err != nil {
		return nil, err
	}
	if err := mgr.Add(unmanaged.AsManagerCache(others)); err != nil {
		return nil, fmt.Errorf("add the cache of the objects Polykube did not make: %w", err)
	}

	for _, r := range reconcilers(mgr, others, opts) {
		if err := r.setup(mgr); err != nil {
			return nil, fmt.Errorf("set up the %s reconciler: %w", r.name, err)
		}
	}

	metrics.ReadStateFrom(mgr.GetClient())
	synced := &atomic.Bool{}
	if err := mgr.Add(identityCheck{mgr: mgr, clusterName: opts.ClusterName, synced: synced}); err != nil {
		return nil, fmt.Errorf("add the ClusterMember check: %w", err)
	}
	if err := mgr.AddHealthzCheck("ping", healthz.Ping); err != nil {
		return nil, fmt.Errorf("add health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("cache", func(*http.Request) error {
		if !synced.Load() {
			return errors.New("informer caches are not synced yet")
		}
		return nil
	}); err != nil {
		return nil, fmt.Errorf("add readiness check: %w", err)
	}
	return mgr, nil
}

type namedSetup struct {
	name  string
	setup func(ctrl.Manager) error
}

// reconcilers lists every reconciler of the operator. Each one gets the manager's client (which
// does not cache Secrets), the scheme, an events.EventRecorder named after it and the cluster name;
// those that check for names in the way also get the cache of foreign objects.
func reconcilers(mgr ctrl.Manager, others cache.Cache, opts Options) []namedSetup {
	c, s := mgr.GetClient(), mgr.GetScheme()
	rec := func(name string) events.EventRecorder { return mgr.GetEventRecorder("polykube-" + name) }
	return []namedSetup{
		{workload.ControllerName, (&workload.Reconciler{
			Client: c, Scheme: s, Recorder: rec(workload.ControllerName), ClusterName: opts.ClusterName, Foreign: others,
			SecretRecheckInterval: opts.SecretRecheckInterval, MaxConcurrentReconciles: opts.MaxConcurrentReconciles,
		}).SetupWithManager},
		{datastorebinding.ControllerName, (&datastorebinding.Reconciler{
			Client: c, Scheme: s, Recorder: rec(datastorebinding.ControllerName), ClusterName: opts.ClusterName,
			SecretRecheckInterval: opts.SecretRecheckInterval,
		}).SetupWithManager},
		{serviceendpoint.ControllerName, (&serviceendpoint.Reconciler{
			Client: c, Scheme: s, Recorder: rec(serviceendpoint.ControllerName), ClusterName: opts.ClusterName, Foreign: others,
		}).SetupWithManager},
		// Registers the Federation and the ClusterMember controllers.
		{federation.ControllerName, (&federation.Reconciler{
			Client: c, Scheme: s, Recorder: rec(federation.ControllerName), ClusterName: opts.ClusterName,
			OperatorVersion: opts.operatorVersion(),
		}).SetupWithManager},
	}
}

// identityCheck logs, once the caches are synced, whether this cluster's ClusterMember exists.
// A missing ClusterMember does not stop the operator: the Federation reconciler reports it as
// ClusterIdentified=False, and Workloads report Ready=False/ClusterUnknown until it appears.
type identityCheck struct {
	mgr         ctrl.Manager
	clusterName string
	synced      *atomic.Bool
}

// NeedLeaderElection is false: every replica reports readiness and its identity.
func (identityCheck) NeedLeaderElection() bool { return false }

func (c identityCheck) Start(ctx context.Context) error {
	log := c.mgr.GetLogger().WithValues("clusterName", c.clusterName)
	if !c.mgr.GetCache().WaitForCacheSync(ctx) {
		return nil // stopped before the caches synced
	}
	c.synced.Store(true)
	member := &polykubev1alpha1.ClusterMember{}
	err := c.mgr.GetClient().Get(ctx, types.NamespacedName{Name: c.clusterName}, member)
	switch {
	case err == nil:
		log.Info("Found this cluster's ClusterMember", "provider", member.Spec.Provider, "clusterID", member.Spec.Mesh.ClusterID)
	case apierrors.IsNotFound(err):
		log.Info("No ClusterMember is named after this cluster; Workloads report Ready=False/ClusterUnknown until Git delivers it")
	default:
		log.Error(err, "Look up this cluster's ClusterMember")
	}
	<-ctx.Done()
	return nil
}
