package datapath

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	polykubev1alpha1 "github.com/polykube/polykube/api/v1alpha1"
	"github.com/polykube/polykube/testbed/topology"
)

// The echo workload in examples/echo is what the demo commits; these tests keep it in step
// with the code that builds the same objects and with the default topology.
func readExample(t *testing.T, name string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "examples", "echo", name))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(data, into); err != nil {
		t.Fatalf("examples/echo/%s: %v", name, err)
	}
}

func TestExampleEcho_WorkloadRunsTheEchoTemplateInEveryCluster(t *testing.T) {
	g := NewWithT(t)
	var w polykubev1alpha1.Workload
	readExample(t, "workload.yaml", &w)
	g.Expect(w.Spec.Template).To(Equal(EchoTemplate(Image)), "examples/echo/workload.yaml and EchoTemplate(Image) must agree")
	g.Expect(w.Namespace).To(Equal(EchoNamespace))
	g.Expect(w.Name).To(Equal(EchoName))
	var targets []string
	for _, tg := range w.Spec.Distribution.Targets {
		targets = append(targets, tg.ClusterRef)
		g.Expect(*tg.Replicas).To(BeNumerically(">", 0))
	}
	g.Expect(targets).To(Equal(topology.Default().ClusterNames()))
}

func TestExampleEcho_ServiceEndpointIsGlobalOnPort80(t *testing.T) {
	g := NewWithT(t)
	var se polykubev1alpha1.ServiceEndpoint
	readExample(t, "serviceendpoint.yaml", &se)
	g.Expect(se.Name).To(Equal(EchoName))
	g.Expect(se.Namespace).To(Equal(EchoNamespace))
	g.Expect(se.Spec.WorkloadRef.Name).To(Equal(EchoName))
	g.Expect(se.Spec.Ports).To(Equal([]polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80, TargetPort: EchoPort}}))
	g.Expect(se.Spec.Affinity).To(Equal(polykubev1alpha1.AffinityNone))
	g.Expect(ProbeURL(se.Namespace, se.Name)).To(Equal("http://echo.polykube-demo.svc.cluster.local./"))

	var ns corev1.Namespace
	readExample(t, "namespace.yaml", &ns)
	g.Expect(ns.Name).To(Equal(EchoNamespace))
}

// examples/local-multicluster/billing-api-echo is what the kind demo commits: the article's
// billing-api (6 in AWS, 4 in GCP, none on-prem) served by the echo server, globally.
func TestExampleBillingAPIEcho(t *testing.T) {
	g := NewWithT(t)
	read := func(name string, into any) {
		data, err := os.ReadFile(filepath.Join("..", "..", "examples", "local-multicluster", "billing-api-echo", name))
		g.Expect(err).NotTo(HaveOccurred())
		g.Expect(yaml.UnmarshalStrict(data, into)).To(Succeed(), name)
	}
	var w polykubev1alpha1.Workload
	read("workload.yaml", &w)
	g.Expect(w.Spec.Template).To(Equal(EchoTemplate(Image)), "billing-api-echo/workload.yaml and EchoTemplate(Image) must agree")
	g.Expect(w.Namespace + "/" + w.Name).To(Equal("production/billing-api"))
	replicas := map[string]int32{}
	for _, tg := range w.Spec.Distribution.Targets {
		replicas[tg.ClusterRef] = *tg.Replicas
	}
	g.Expect(replicas).To(Equal(map[string]int32{"aws-eu-central-1": 6, "gcp-europe-west3": 4}))
	g.Expect(topology.Default().ClusterNames()).To(ContainElements("aws-eu-central-1", "gcp-europe-west3", "onprem-fra"))

	var se polykubev1alpha1.ServiceEndpoint
	read("serviceendpoint.yaml", &se)
	g.Expect(se.Namespace + "/" + se.Name).To(Equal("production/billing-api"))
	g.Expect(se.Spec.WorkloadRef.Name).To(Equal("billing-api"))
	g.Expect(se.Spec.Ports).To(Equal([]polykubev1alpha1.WorkloadPort{{Name: "http", Port: 80, TargetPort: EchoPort}}))
	g.Expect(se.Spec.Affinity).To(Equal(polykubev1alpha1.AffinityNone))

	var ns corev1.Namespace
	read("namespace.yaml", &ns)
	g.Expect(ns.Name).To(Equal("production"))
}
