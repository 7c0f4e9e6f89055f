package flags

import (
	"flag"
	"io"
	"strings"
	"testing"
	"time"

	. "github.com/onsi/gomega"
)

func parse(args ...string) (*Parsed, error) {
	fs := flag.NewFlagSet("operator", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	return Parse(fs, args)
}

func TestParse(t *testing.T) {
	g := NewWithT(t)
	p, err := parse("--cluster-name=east", "--leader-elect", "--leader-election-namespace=polykube-system",
		"--metrics-bind-address=:9090", "--health-probe-bind-address=:9091", "--secret-recheck-interval=5s",
		"--kubeconfig=/tmp/kc", "--zap-log-level=debug", "--metrics-cert-dir=/etc/polykube/metrics-tls")
	g.Expect(err).NotTo(HaveOccurred())
	o := p.Options
	g.Expect(o.ClusterName).To(Equal("east"))
	g.Expect(o.LeaderElect).To(BeTrue())
	g.Expect(o.LeaderElectionNamespace).To(Equal("polykube-system"))
	g.Expect(o.MetricsBindAddress).To(Equal(":9090"))
	g.Expect(o.HealthProbeBindAddress).To(Equal(":9091"))
	g.Expect(o.MetricsCertDir).To(Equal("/etc/polykube/metrics-tls"))
	g.Expect(o.SecretRecheckInterval).To(Equal(5 * time.Second))
	g.Expect(o.MaxConcurrentReconciles).To(Equal(DefaultMaxConcurrentReconciles))
}

func TestParse_ValidClusterNames(t *testing.T) {
	for _, name := range []string{"east", "aws-eu-central-1", "a", strings.Repeat("a", 32), "0cluster"} {
		if _, err := parse("--cluster-name=" + name); err != nil {
			t.Errorf("--cluster-name=%s: %v", name, err)
		}
	}
}

func TestParseDefaults(t *testing.T) {
	g := NewWithT(t)
	p, err := parse("--cluster-name=east")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Options.MetricsBindAddress).To(Equal(":8443"), "the HTTPS port gitops/operator's Service targets")
	g.Expect(p.Options.MetricsCertDir).To(BeEmpty(), "a self-signed certificate by default")
	g.Expect(p.Options.HealthProbeBindAddress).To(Equal(DefaultHealthProbeBindAddress))
	g.Expect(p.Options.LeaderElect).To(BeFalse())
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"cluster name missing", nil, "--cluster-name is required"},
		{"cluster name empty", []string{"--cluster-name="}, "--cluster-name is required"},
		{"cluster name empty names the Helm value", []string{"--cluster-name="}, "Helm, the chart's value clusterName"},
		{"cluster name not substituted", []string{"--cluster-name=${CLUSTER_NAME}"}, `was not substituted`},
		{"cluster name not substituted names the Flux substitution", []string{"--cluster-name=${CLUSTER_NAME}"}, "spec.postBuild.substitute.CLUSTER_NAME"},
		{"cluster name half substituted", []string{"--cluster-name=east-$CLUSTER"}, `was not substituted`},
		{"cluster name not a DNS label", []string{"--cluster-name=East_1"}, "is not a DNS label"},
		{"cluster name too long for ClusterMesh", []string{"--cluster-name=" + strings.Repeat("a", 33)}, "33 characters: ClusterMesh allows at most 32"},
		{"positional arguments", []string{"--cluster-name=east", "extra"}, "unexpected arguments"},
		{"no workers", []string{"--cluster-name=east", "--max-concurrent-reconciles=0"}, "use 1 or more"},
		{"unknown flag", []string{"--cluster=east"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := parse(tt.args...)
			NewWithT(t).Expect(err).To(MatchError(ContainSubstring(tt.want)))
		})
	}
}

func TestParse_VersionNeedsNoClusterName(t *testing.T) {
	g := NewWithT(t)
	p, err := parse("--version")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Version).To(BeTrue())
}

func TestParse_WatchNamespaces(t *testing.T) {
	g := NewWithT(t)
	p, err := parse("--cluster-name=east")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Options.WatchNamespaces).To(BeEmpty(), "every namespace by default")

	p, err = parse("--cluster-name=east", "--watch-namespaces=team-a,team-b")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(p.Options.WatchNamespaces).To(Equal([]string{"team-a", "team-b"}))

	for arg, want := range map[string]string{
		"--watch-namespaces=team-a,Team_B": `"Team_B" is not a namespace name`,
		"--watch-namespaces=team-a,":       "has an empty entry",
		"--watch-namespaces=team-a, b":     `" b" is not a namespace name`,
		"--watch-namespaces=a,b,a":         `lists "a" twice`,
	} {
		_, err := parse("--cluster-name=east", arg)
		g.Expect(err).To(MatchError(ContainSubstring(want)), arg)
	}
}
