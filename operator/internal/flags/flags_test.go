package flags

import (
	"flag"
	"io"
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
