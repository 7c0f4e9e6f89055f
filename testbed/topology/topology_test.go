package topology

import (
	"os"
	"strings"
	"testing"
	"time"

	"github.com/onsi/gomega"
)

func TestDefault_IsTheArticlesFederation(t *testing.T) {
	g := gomega.NewWithT(t)
	top := Default()
	g.Expect(top.ClusterNames()).To(gomega.Equal([]string{"aws-eu-central-1", "gcp-europe-west3", "onprem-fra"}))
	g.Expect(top.Provider).To(gomega.Equal(ProviderKwok))
	g.Expect(top.Addons).To(gomega.Equal([]string{AddonGit, AddonFlux, AddonOperator}))
	g.Expect(top.Cluster("gcp-europe-west3").Region).To(gomega.Equal("europe-west3"))
	g.Expect(top.Flux.Interval.Duration).To(gomega.Equal(10 * time.Second))
}

func TestDefault_MatchesTheExample(t *testing.T) {
	g := gomega.NewWithT(t)
	example, err := os.ReadFile("../../examples/local-multicluster/topology.yaml")
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(string(example)).To(gomega.Equal(string(DefaultYAML())),
		"examples/local-multicluster/topology.yaml and testbed/topology/default.yaml must be the same file")
	_, err = Load("../../examples/local-multicluster/topology.yaml")
	g.Expect(err).NotTo(gomega.HaveOccurred())
}

const header = "apiVersion: testbed.polykube.kismet.io/v1alpha1\nkind: Topology\nname: t\n"

func TestParse_Errors(t *testing.T) {
	tests := []struct {
		name string
		yaml string
		want []string // substrings the error must contain
	}{
		{"unknown field", header + "clusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16], colour: red}]",
			[]string{`unknown field "colour"`}},
		{"wrong apiVersion", "apiVersion: v1\nkind: Topology\nname: t\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`apiVersion: "v1" is not supported`}},
		{"no clusters", header, []string{"at least one cluster"}},
		{"duplicate names and IDs", header + `clusters:
- {name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}
- {name: a, provider: gcp, clusterID: 1, podCIDRs: [10.2.0.0/16]}`,
			[]string{"clusters[1] (a).name: duplicate of clusters[0]", "clusterID: 1 is already the ID of a"}},
		{"overlapping CIDRs", header + `clusters:
- {name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16], serviceCIDR: 10.96.0.0/16}
- {name: b, provider: gcp, clusterID: 2, podCIDRs: [10.1.128.0/17], serviceCIDR: 10.96.0.0/16}`,
			[]string{"podCIDRs[0]: 10.1.128.0/17 overlaps 10.1.0.0/16", "serviceCIDR: 10.96.0.0/16 overlaps 10.96.0.0/16"}},
		{"long name", header + "clusters: [{name: " + strings.Repeat("a", 33) + ", provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{"33 characters is too long"}},
		{"unknown providers and add-on", header + "provider: minikube\naddons: [git, argo]\nclusters: [{name: a, provider: ibm, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`unknown provider "ibm"`, `unknown add-on "argo"`}},
		{"add-on without its dependency", header + "addons: [operator]\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`"operator" needs "flux"`}},
		{"prometheus without the operator", header + "addons: [git, flux, prometheus]\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`"prometheus" needs "operator"`}},
		{"registry on a host name", header + "addons: [git, flux, operator, registry]\nregistry: {address: localhost}\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`registry.address: "localhost" is not an IP address`}},
		{"registry mirror with a scheme", header + "addons: [git, flux, operator, registry]\nregistry: {mirrors: [\"http://mirror.example\", registry.onprem.example]}\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`registry.mirrors: "http://mirror.example" is not a registry host name`}},
		{"bad CIDR and ID", header + "clusters: [{name: a, provider: aws, clusterID: 300, podCIDRs: [10.1.0.1/16, nope]}]",
			[]string{"clusterID: 300 is out of range", "has host bits set", `"nope" is not a CIDR`}},
		{"existing needs a context", header + "provider: existing\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{"context: required with provider existing"}},
		{"unknown wait and bad duration", header + "waits: {forever: {timeout: 1s}}\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`unknown wait "forever"`}},
		{"unparsable duration", header + "flux: {interval: soon}\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`"soon" is not a duration`}},
		{"intervals too short", header + "flux: {interval: 500ms, applyInterval: -1s}\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{"flux.interval: 500ms is too short", "flux.applyInterval: -1s is too short"}},
		{"mesh mirror too fast", header + "addons: [git, flux, operator, mesh-mirror]\nmeshMirror: {interval: 10ms}\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{"meshMirror.interval: 10ms is too short"}},
		{"unknown delivery", header + "delivery: fleet\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`delivery: "fleet" is not a delivery system; use flux, argocd or argocd-central`}},
		{"flux add-on with Argo CD delivery", header + "delivery: argocd\naddons: [git, flux, operator]\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{`addons: "flux" is not the delivery of this topology (delivery: argocd); list "argocd" instead`, `"operator" needs "argocd"`}},
		{"Argo CD with the add-ons in kind clusters", header + "provider: kind\ndelivery: argocd\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{"delivery: argocd runs only as host processes beside kwok or existing clusters"}},
		{"central Argo CD with the add-ons in k0s clusters", header + "provider: k0s\ndelivery: argocd-central\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]",
			[]string{"delivery: argocd-central runs only as host processes beside kwok or existing clusters"}},
		{"mesh name on kwok", header + "clusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16], meshName: a-prod}]",
			[]string{"clusters[0] (a).meshName: Cilium's cluster.name is set where the test bed installs Cilium (provider kind or k0s), not with provider kwok"}},
		{"mesh names not labels or taken", header + `provider: kind
clusters:
- {name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16], meshName: A_prod}
- {name: b, provider: aws, clusterID: 2, podCIDRs: [10.2.0.0/16], meshName: c}
- {name: c, provider: aws, clusterID: 3, podCIDRs: [10.3.0.0/16]}`,
			[]string{`clusters[0] (a).meshName: "A_prod" must be a DNS label`, `Cilium would go by "c" in both b and c`}},
		{"too many nodes for the CIDR", header + "clusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/23], fakeNodes: 3}]",
			[]string{"3 nodes need 3 /24 node CIDRs"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := gomega.NewWithT(t)
			_, err := Parse([]byte(tt.yaml))
			g.Expect(err).To(gomega.HaveOccurred())
			for _, w := range tt.want {
				g.Expect(err.Error()).To(gomega.ContainSubstring(w))
			}
		})
	}
}

func TestParse_DefaultsAndWaits(t *testing.T) {
	g := gomega.NewWithT(t)
	top, err := Parse([]byte(header + "waits: {delivery: {timeout: 5m}}\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(top.Provider).To(gomega.Equal(ProviderKwok))
	g.Expect(top.Clusters[0].FakeNodes).To(gomega.Equal(1))
	g.Expect(top.Flux.Interval.Duration).To(gomega.Equal(10 * time.Second))
	g.Expect(top.Flux.ApplyInterval.Duration).To(gomega.Equal(time.Minute))
	g.Expect(top.Wait(WaitDelivery).Timeout.Duration).To(gomega.Equal(5 * time.Minute))
	g.Expect(top.Wait(WaitDelivery).Interval).To(gomega.Equal(DefaultWaits[WaitDelivery].Interval))
	g.Expect(top.Wait(WaitClusterReady)).To(gomega.Equal(DefaultWaits[WaitClusterReady]))
	g.Expect(top.HasAddon(AddonMeshMirror)).To(gomega.BeFalse(), "the mesh mirror is not a default add-on")
	g.Expect(top.MeshMirror).To(gomega.BeZero(), "no mesh-mirror settings without the add-on")
	g.Expect(top.Delivery).To(gomega.Equal(DeliveryFlux))
	g.Expect(top.HasDelivery()).To(gomega.BeTrue())
}

func TestParse_ArgoCDDeliveryTakesFluxsPlace(t *testing.T) {
	g := gomega.NewWithT(t)
	top, err := Parse([]byte(header + "delivery: argocd\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(top.Addons).To(gomega.Equal([]string{AddonGit, AddonArgoCD, AddonOperator}))
	g.Expect(top.DeliveryAddon()).To(gomega.Equal(AddonArgoCD))
	g.Expect(top.HasAddon(AddonFlux)).To(gomega.BeFalse())
}

func TestParse_CentralArgoCDHasOneHub(t *testing.T) {
	g := gomega.NewWithT(t)
	top, err := Parse([]byte(header + "delivery: argocd-central\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}, {name: b, provider: gcp, clusterID: 2, podCIDRs: [10.2.0.0/16]}]"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(top.Addons).To(gomega.Equal([]string{AddonGit, AddonArgoCD, AddonOperator}))
	g.Expect(top.ArgoCD()).To(gomega.BeTrue())
	g.Expect(top.ArgoCDHub("b")).To(gomega.Equal("a"), "the first cluster holds the hub")
	top.Delivery = DeliveryArgoCD
	g.Expect(top.ArgoCDHub("b")).To(gomega.Equal("b"), "with an Argo CD per cluster each is its own")
	top.Delivery = DeliveryFlux
	g.Expect(top.ArgoCD()).To(gomega.BeFalse())
	g.Expect(top.ArgoCDHub("b")).To(gomega.BeEmpty())
}

func TestCluster_CiliumName(t *testing.T) {
	g := gomega.NewWithT(t)
	top, err := Parse([]byte(header + `provider: kind
clusters:
- {name: alpha, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}
- {name: gamma, provider: aws, clusterID: 3, podCIDRs: [10.3.0.0/16], meshName: gamma-prod}`))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(top.Clusters[0].CiliumName()).To(gomega.Equal("alpha"))
	g.Expect(top.Clusters[1].CiliumName()).To(gomega.Equal("gamma-prod"))
	g.Expect(top.Misnamed()).To(gomega.Equal([]string{"gamma"}))
}

func TestParse_MeshMirrorDefaults(t *testing.T) {
	g := gomega.NewWithT(t)
	top, err := Parse([]byte(header + "addons: [git, flux, operator, mesh-mirror]\nclusters: [{name: a, provider: aws, clusterID: 1, podCIDRs: [10.1.0.0/16]}]"))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(top.MeshMirror.Interval.Duration).To(gomega.Equal(time.Second))
	g.Expect(top.MeshMirror.CacheTTL.Duration).To(gomega.Equal(5 * time.Second))
}

func TestCluster_NodeCIDR(t *testing.T) {
	g := gomega.NewWithT(t)
	c := Cluster{Name: "a", PodCIDRs: []string{"10.242.0.0/16"}}
	g.Expect(c.NodeCIDR(0)).To(gomega.Equal("10.242.0.0/24"))
	g.Expect(c.NodeCIDR(3)).To(gomega.Equal("10.242.3.0/24"))
	_, err := c.NodeCIDR(256)
	g.Expect(err).To(gomega.HaveOccurred())
	small := Cluster{Name: "b", PodCIDRs: []string{"10.1.2.0/25"}}
	g.Expect(small.NodeCIDR(0)).To(gomega.Equal("10.1.2.0/25"))
}

func TestParse_IsolatedNetworkWithOverlay(t *testing.T) {
	g := gomega.NewWithT(t)
	const kindClusters = "\nclusters:\n- {name: a, provider: kind, clusterID: 1, podCIDRs: [10.1.0.0/16], serviceCIDR: 10.91.0.0/16}\n- {name: b, provider: kind, clusterID: 2, podCIDRs: [10.2.0.0/16], serviceCIDR: 10.92.0.0/16}\n"
	top, err := Parse([]byte(header + "provider: kind\nnetwork: isolated\noverlay: wireguard" + kindClusters))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(top.Isolated()).To(gomega.BeTrue())
	g.Expect(top.OverlayPort).To(gomega.Equal(DefaultOverlayPort))
	g.Expect(top.OverlayCIDR).To(gomega.Equal(DefaultOverlayCIDR))

	plain, err := Parse([]byte(header + "provider: kind" + kindClusters))
	g.Expect(err).NotTo(gomega.HaveOccurred())
	g.Expect(plain.Network).To(gomega.Equal(NetworkShared))
	g.Expect(plain.Isolated()).To(gomega.BeFalse())
	g.Expect(plain.OverlayPort).To(gomega.BeZero(), "no overlay, no overlay port")

	for _, tc := range []struct{ name, yaml, want string }{
		{"isolated without overlay", "provider: kind\nnetwork: isolated" + kindClusters, "add overlay: wireguard"},
		{"isolated on kwok", "provider: kwok\nnetwork: isolated\noverlay: wireguard" + kindClusters, "network: isolated needs provider kind"},
		{"unknown network", "provider: kind\nnetwork: vpc" + kindClusters, `network: "vpc" is not a network`},
		{"unknown overlay", "provider: kind\nnetwork: isolated\noverlay: ipsec" + kindClusters, `overlay: "ipsec" is not an overlay`},
		{"overlay on a shared network", "provider: kind\noverlay: wireguard" + kindClusters, "runs only with network: isolated"},
		{"overlay CIDR over a pod CIDR", "provider: kind\nnetwork: isolated\noverlay: wireguard\noverlayCIDR: 10.2.0.0/24" + kindClusters, "overlaps"},
		{"overlay CIDR too small", "provider: kind\nnetwork: isolated\noverlay: wireguard\noverlayCIDR: 100.96.0.0/28" + kindClusters, "too small"},
		{"overlay port out of range", "provider: kind\nnetwork: isolated\noverlay: wireguard\noverlayPort: 70000" + kindClusters, "not a UDP port"},
		{"overlay port without overlay", "provider: kind\noverlayPort: 51821" + kindClusters, "set overlay: wireguard or remove them"},
	} {
		_, err := Parse([]byte(header + tc.yaml))
		g.Expect(err).To(gomega.MatchError(gomega.ContainSubstring(tc.want)), tc.name)
	}
}
