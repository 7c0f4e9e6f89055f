package host

import (
	"testing"

	"github.com/onsi/gomega"
)

// The add-on's configuration scrapes as the ServiceMonitor does.
func TestPrometheusConfig(t *testing.T) {
	g := gomega.NewWithT(t)
	cfg := string(prometheusConfig("aws-eu-central-1", 18443))
	for _, want := range []string{"job_name: polykube-operator-metrics", "scheme: https", "insecure_skip_verify: true",
		"credentials_file: token", `targets: ["127.0.0.1:18443"]`, "rule_files: [rules.yaml]", "cluster: aws-eu-central-1"} {
		g.Expect(cfg).To(gomega.ContainSubstring(want))
	}
}
