package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/polykube/polykube/internal/toolchain"
	"github.com/polykube/polykube/testbed"
	"github.com/polykube/polykube/testbed/ports"
	"github.com/polykube/polykube/testbed/promserver"
	"github.com/polykube/polykube/testbed/topology"
)

// The Prometheus add-on runs one Prometheus per cluster, as a process of this machine, that
// scrapes that cluster's operator over HTTPS with a token of a ServiceAccount bound to
// polykube-metrics-reader (so the operator's TokenReview and SubjectAccessReview are real) and
// evaluates the rules of gitops/monitoring/prometheusrule.yaml as they are (or with every `for`
// shortened to the topology's prometheus.alertForAtMost, for scenarios that wait alerts out).
const (
	// PrometheusNamespace and PrometheusServiceAccount are the identity Prometheus scrapes as.
	PrometheusNamespace      = "monitoring"
	PrometheusServiceAccount = "prometheus"
	// MetricsReaderRole is the ClusterRole of gitops/operator that may read /metrics.
	MetricsReaderRole = "polykube-metrics-reader"
	// PrometheusJob is the scrape job, named as the ServiceMonitor's job so that the alerts
	// (PolykubeOperatorDown reads up{job=...}) hold unchanged.
	PrometheusJob = "polykube-operator-metrics"
	// prometheusInterval is the scrape and evaluation interval: short, so that scenarios wait
	// for an alert's `for` and little more.
	prometheusInterval = "2s"
	// prometheusTokenSeconds is how long the scrape token lives (a day, as the operator's).
	prometheusTokenSeconds = 24 * 60 * 60
)

func prometheusProc(cluster string) string { return cluster + "-prometheus" }

// upPrometheus starts every cluster's Prometheus.
func (tb *Testbed) upPrometheus(ctx context.Context) error {
	src, err := tb.sourceDir()
	if err != nil {
		return err
	}
	raw, err := os.ReadFile(filepath.Join(src, "gitops", "monitoring", "prometheusrule.yaml"))
	if err != nil {
		return fmt.Errorf("the prometheus add-on loads the alert rules of this checkout: %w", err)
	}
	rules, err := promserver.RulesFile(raw)
	if err != nil {
		return fmt.Errorf("gitops/monitoring/prometheusrule.yaml: %w", err)
	}
	if limit := tb.state.Topology.Prometheus.AlertForAtMost.Duration; limit > 0 {
		if rules, err = promserver.CapFor(rules, limit); err != nil {
			return fmt.Errorf("gitops/monitoring/prometheusrule.yaml with prometheus.alertForAtMost %s: %w", limit, err)
		}
	}
	return tb.forEachCluster(func(c topology.Cluster) error { return tb.startPrometheus(ctx, c.Name, rules) })
}

// startPrometheus binds the scrape identity, writes its token and the configuration, and starts
// the cluster's Prometheus (on the port recorded at its first start).
func (tb *Testbed) startPrometheus(ctx context.Context, cluster string, rules []byte) error {
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	tb.mu.Unlock()
	if cs == nil || cs.Operator.Metrics == 0 {
		return fmt.Errorf("cluster %s runs no operator to scrape: the prometheus add-on needs the operator add-on", cluster)
	}
	bin, err := tb.binary(toolchain.Prometheus)
	if err != nil {
		return err
	}
	if cs.Prometheus == 0 {
		p, err := ports.Free(1)
		if err != nil {
			return err
		}
		tb.mu.Lock()
		cs.Prometheus = p[0]
		tb.mu.Unlock()
		if err := tb.saveState(); err != nil {
			return err
		}
	}
	dir := filepath.Join(tb.dir, "prometheus", cluster)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	token, err := tb.metricsReaderToken(ctx, cluster)
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "token"), []byte(token), 0o600); err != nil {
		return err
	}
	_, err = promserver.Start(ctx, promserver.Options{
		Name: prometheusProc(cluster), Binary: bin, Procs: tb.procs, DataDir: dir, Port: cs.Prometheus,
		Config: prometheusConfig(cluster, cs.Operator.Metrics),
		Rules:  map[string][]byte{"rules.yaml": rules},
		Ready:  tb.wait(topology.WaitProcess),
	})
	return err
}

// prometheusConfig scrapes the cluster's operator as the ServiceMonitor does: HTTPS, the
// self-signed certificate not verified, the reader's token.
func prometheusConfig(cluster string, metricsPort int) []byte {
	return []byte(strings.TrimSpace(fmt.Sprintf(`
global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
  external_labels:
    cluster: %[2]s
rule_files: [rules.yaml]
scrape_configs:
  - job_name: %[3]s
    scheme: https
    tls_config:
      insecure_skip_verify: true
    authorization:
      credentials_file: token
    static_configs:
      - targets: ["127.0.0.1:%[4]d"]
`, prometheusInterval, cluster, PrometheusJob, metricsPort)) + "\n")
}

// metricsReaderToken creates Prometheus's ServiceAccount and its binding to
// polykube-metrics-reader (which Flux applied with the operator base), and requests a token.
func (tb *Testbed) metricsReaderToken(ctx context.Context, cluster string) (string, error) {
	cl, err := tb.Client(cluster)
	if err != nil {
		return "", err
	}
	for _, obj := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: PrometheusNamespace}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: PrometheusServiceAccount, Namespace: PrometheusNamespace}},
		&rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "polykube-testbed-prometheus"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: MetricsReaderRole},
			Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Name: PrometheusServiceAccount, Namespace: PrometheusNamespace}},
		},
	} {
		if err := cl.Create(ctx, obj); err != nil && !apierrors.IsAlreadyExists(err) {
			return "", fmt.Errorf("create %T %s in %s: %w", obj, obj.GetName(), cluster, err)
		}
	}
	c, err := tb.Cluster(cluster)
	if err != nil {
		return "", err
	}
	cfg, err := c.RESTConfig()
	if err != nil {
		return "", err
	}
	kc, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return "", err
	}
	tr, err := kc.CoreV1().ServiceAccounts(PrometheusNamespace).CreateToken(ctx, PrometheusServiceAccount, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(prometheusTokenSeconds))},
	}, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("request a token for ServiceAccount %s/%s in %s: %w", PrometheusNamespace, PrometheusServiceAccount, cluster, err)
	}
	return tr.Status.Token, nil
}

// Prometheus returns a client of the cluster's Prometheus.
func (tb *Testbed) Prometheus(cluster string) (*promserver.Server, error) {
	tb.mu.Lock()
	cs := tb.state.Clusters[cluster]
	tb.mu.Unlock()
	if cs == nil || cs.Prometheus == 0 {
		return nil, fmt.Errorf("cluster %s runs no Prometheus: add the %s add-on to the topology", cluster, topology.AddonPrometheus)
	}
	return promserver.Connect(fmt.Sprintf("http://127.0.0.1:%d", cs.Prometheus)), nil
}

// The host bed can run the prometheus add-on.
var _ testbed.PrometheusAddon = (*Testbed)(nil)
